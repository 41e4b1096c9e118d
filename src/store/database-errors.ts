import { ServiceError } from '../domain/errors.ts';
import type { Dialect } from './dialect.ts';

/**
 * The one place database errors are classified and become ServiceErrors. A request can make the
 * database fail in a few ways that are its own doing or bad luck, never the service's fault; each is
 * a ServiceError with a stable code. Anything else stays a fault (a 500, logged).
 */

/**
 * What the failed statement was writing, which says what a unique violation means there. Without
 * it a unique violation is not classified: one the code did not expect is a fault, not a 409.
 */
export type Writing =
  /** One row, by id: that id exists. */
  | { kind: 'row'; id: string }
  /** Several rows of one table: one of their ids exists (`duplicateRow` may tell which). */
  | { kind: 'rows' }
  /** An item of a generic resource (`label` names it in messages): another one holds a unique value of it. */
  | { kind: 'item'; label: string };

/** A row with this id exists (found by a constraint, or by looking first). */
export function rowExists(id: string): ServiceError {
  return new ServiceError('row_exists', `a row with id ${id} already exists; set options.upsert to update it`);
}

/**
 * What a database error means to the service, by the dialect's predicates (dialect.ts): the one
 * classification, which every caller asks. Anything else (undefined) is a fault.
 */
export type DatabaseFailure =
  /** A unique constraint refused the write: what it means depends on what was written (Writing). */
  | 'unique_violation'
  /** A user table or field the statement names is gone: the table changed while the request ran. */
  | 'schema_changed'
  /** The table has reached the database's limit of columns. */
  | 'too_many_columns'
  /** A deadlock or serialization failure (PostgreSQL): the transaction can be run again from its start. */
  | 'retryable';

export function classifyDatabaseError(err: unknown, dialect: Dialect): DatabaseFailure | undefined {
  if (err instanceof ServiceError) return undefined;
  if (dialect.isUniqueViolation(err)) return 'unique_violation';
  if (dialect.isSchemaChanged(err)) return 'schema_changed';
  if (dialect.isTooManyColumns(err)) return 'too_many_columns';
  if (dialect.isRetryable(err)) return 'retryable';
  return undefined;
}

/** The ServiceError a database error stands for; a ServiceError as it is; undefined for a fault. */
export function toServiceError(err: unknown, dialect: Dialect, writing?: Writing): ServiceError | undefined {
  if (err instanceof ServiceError) return err;
  switch (classifyDatabaseError(err, dialect)) {
    case 'unique_violation':
      if (!writing) return undefined;
      if (writing.kind === 'row') return rowExists(writing.id);
      if (writing.kind === 'rows') return new ServiceError('row_exists', 'a row with one of these ids already exists');
      return new ServiceError('unique_value', uniqueViolationMessage(err, writing.label));
    case 'schema_changed':
      return new ServiceError('schema_changed', "The table's fields changed while this request ran; send it again");
    case 'too_many_columns':
      return new ServiceError(
        'too_many_columns',
        "The table has reached the database's limit of columns (fields removed over time count too): create a new table",
      );
    default:
      return undefined;
  }
}

/**
 * Which of the rows one statement inserted has an id that exists: the only one, or the one
 * PostgreSQL names (`Key (id)=(x) already exists.`; SQLite names no value). -1: not such a failure, or unknown.
 */
export function duplicateRow(err: unknown, dialect: Dialect, ids: readonly string[]): number {
  if (classifyDatabaseError(err, dialect) !== 'unique_violation') return -1;
  if (ids.length === 1) return 0;
  const id = /^Key \(id\)=\((.*)\) already exists/.exec((err as { detail?: string }).detail ?? '')?.[1];
  return id === undefined ? -1 : ids.indexOf(id);
}

/** A unique violation as a message that names the column, never SQL. */
function uniqueViolationMessage(err: unknown, label: string): string {
  const e = err as { message?: string; detail?: string };
  // PostgreSQL: detail 'Key (name)=(FOO) already exists.'; SQLite: 'UNIQUE constraint failed: rh_members.email'.
  const pg = /^Key \((.+?)\)=/.exec(e.detail ?? '');
  const lite = /constraint failed: ([\w.]+(?:, [\w.]+)*)/.exec(e.message ?? '');
  const columns = pg ? pg[1].split(', ') : lite ? lite[1].split(', ').map((c) => c.split('.').pop()) : [];
  const what = columns.length > 0 ? `this ${columns.join(' and ')}` : 'the same unique value';
  return `another ${label} already has ${what}`;
}
