import type { RawRow } from '../domain/row.ts';
import type { TableDef } from '../domain/table.ts';

/** What the change log (change-log.ts) and each database's statements for it (ChangeNumbering) share. */

export type ChangeType = 'create' | 'update' | 'delete';

/** A change as a write reports it; `row` is the row after it, as the database returns it (null for a delete). */
export interface RowChange {
  type: ChangeType;
  rowId: string;
  row: RawRow | null;
  /** The field codes an update wrote; null for a create or delete. */
  changedFields: string[] | null;
}

/**
 * What a single-row write did, for its entry (see ChangeLog.writeAlone). A `create` carries its
 * row as it was bound (RowStore.newRow): the insert returns only the id, and the row as bound
 * decodes and renders as the row read back does. `upsert`: PostgreSQL's one-statement upsert,
 * whose row says whether it was `inserted`.
 */
export type LoneWrite = { type: 'create'; row: RawRow } | { type: 'delete' } | { type: 'update' | 'upsert'; changedFields: string[] };

/**
 * A request's answer kept by its single-row create in the same atomic step (an Idempotency-Key's,
 * CONTRACT §12; http/idempotency.ts): the insert of its record, whose body is the created row's
 * record (as the entry keeps it, and as the answer is rendered). A plain insert: a record of the
 * key, even an expired one, fails it, and with it the create (nothing of either is written).
 */
export interface AnswerWithWrite {
  /** The insert's SQL: `place(i)` binds `parameters[i]`, `record` is where the row's record is bound. */
  sql(place: (i: number) => string, record: string): string;
  readonly parameters: readonly unknown[];
  /**
   * The delete of the record the insert made (`place(i)` binds `forgetParameters[i]`): where the
   * two are separate statements (SQLite), what backs the insert out when the create's own fails.
   */
  forget(place: (i: number) => string): string;
  readonly forgetParameters: readonly unknown[];
  /** The create and its answer have committed: the body kept (the row's record). */
  written(body: string): void;
}

/** The change a write made to `row` (as RETURNING gave it: a delete's and a create's hold the id only). */
export function changeOf(what: LoneWrite, row: RawRow): RowChange {
  const rowId = row.id;
  if (what.type === 'delete') return { type: 'delete', rowId, row: null, changedFields: null };
  if (what.type === 'create') return { type: 'create', rowId, row: what.row, changedFields: null };
  if (row.inserted === true) return { type: 'create', rowId, row, changedFields: null };
  return { type: 'update', rowId, row, changedFields: what.changedFields };
}

/** A table's entries a transaction has noted and not yet written. */
export interface PendingEntries {
  table: TableDef;
  memberId: string;
  occurredAt: string;
  changes: RowChange[];
}

/** What the change log lends the database's statements: each entry's bound fields, and its caches of statement text. */
export interface EntryMaker {
  /** An entry's type, row id, row (its JSON text) and changed fields (theirs), as the statements bind them. */
  entryFields(table: TableDef, c: RowChange): unknown[];
  /** A row's record, as an entry keeps it (its JSON text). */
  recordText(table: TableDef, row: RawRow): string;
  /** A statement of a table version's by key, made once. */
  tableStatement(table: TableDef, key: string, make: () => string): string;
  /** A statement's SQL by key, made once. */
  statement(key: string, make: () => string): string;
}

/** Entries per insert statement (8 columns each, well within both databases' limits on bound values). */
export const PER_STATEMENT = 500;

// The statements every row write makes, as SQL text: built with the query builder they cost more
// than the write itself (a single-row create on SQLite: 1,286 against 4,095 req/s for the floor).
export const ENTRY_COLUMNS = '"tableId", "sequence", "type", "rowId", "row", "changedFields", "occurredAt", "memberId"';
