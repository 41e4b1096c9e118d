/**
 * Every difference between SQLite and PostgreSQL that the store cares about, in one place.
 * The rest of the code asks this object instead of testing which database it runs on.
 */
import { type QueryExecutorProvider, type RawBuilder, type SqlBool, sql } from 'kysely';
import type { ColumnKind, ValueCodec } from '../domain/value-codec.ts';

export type { ColumnKind } from '../domain/value-codec.ts';

export type DialectName = 'sqlite' | 'postgres';

/** Values are bound as the driver wants them, and read back, through the codec's methods. */
export interface Dialect extends ValueCodec {
  /** For messages, and for the released migrations that run on one database only; other code asks the members below. */
  name: DialectName;
  columnType(kind: ColumnKind): string;
  /** A unique or primary-key constraint failed. */
  isUniqueViolation(err: unknown): boolean;
  /** A table or column the statement names is gone: the table was changed by another request meanwhile. */
  isSchemaChanged(err: unknown): boolean;
  /** The table has reached the database's limit of columns (PostgreSQL counts dropped ones too). */
  isTooManyColumns(err: unknown): boolean;
  /** The database gave up on the transaction because of other writers: running it again may succeed. */
  isRetryable(err: unknown): boolean;
  /** Inside a migration's transaction: other instances migrating at the same time wait until it ends. */
  lockMigrations(tx: QueryExecutorProvider): Promise<void>;
  /** Whether `ALTER TABLE … ALTER COLUMN … SET/DROP NOT NULL` exists; SQLite rebuilds the table instead. */
  canAlterNullability: boolean;
  /**
   * How many rows one INSERT of a bulk write carries: on PostgreSQL as many as fit (each statement
   * is a round trip); on SQLite one, as a prepared single-row insert run again is faster there
   * (20,000 rows: 294 ms against 338 ms in 1,000-row statements).
   */
  rowsPerInsert(columns: number): number;
  /** Whether SELECT … FOR UPDATE exists and is needed: SQLite runs one write transaction at a time. */
  lockRows: boolean;
  /** Whether a WITH may hold an INSERT … RETURNING (PostgreSQL): two writes in one statement, one round trip. */
  writingWith: boolean;
  /**
   * Text longer than this many characters may not fit an index entry (PostgreSQL's B-tree holds
   * about 2.7 KB): text is indexed and sorted by this prefix first, then by its whole value.
   * null: any text fits (SQLite).
   */
  textKeyPrefix: number | null;
  /** Where NULLs sort when an ORDER BY names no NULLS FIRST/LAST (SQLite: smallest; PostgreSQL: largest). */
  nullsFirstByDefault(direction: 'asc' | 'desc'): boolean;
  /** Some element of the JSON array in `column` equals the scalar `value`, with its JSON type. */
  listContains(column: string, value: string | number | boolean): RawBuilder<SqlBool>;
  /** Lower case of every letter, not only ASCII (for case-insensitive matching). */
  lower(expr: RawBuilder<unknown> | ReturnType<typeof sql.ref>): RawBuilder<string>;
  /** `now`, or 1 ms past the column's value when the clock has not moved beyond it: a timestamp that always moves. */
  nextTimestamp(column: string, now: unknown): RawBuilder<unknown>;
  /**
   * In the RETURNING list of INSERT … ON CONFLICT DO UPDATE: whether the row was inserted rather
   * than updated. null where the database cannot tell (SQLite), which then upserts in two steps.
   */
  upsertInserted: RawBuilder<boolean> | null;
}

const messageOf = (err: unknown) => String((err as { message?: unknown })?.message ?? '');
/** A user table's or field's physical name: only those change under a running request. */
const USER_TABLE_NAME = /\b(rows|f)_[0-9a-f]{32}\b/;

function errCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : undefined;
}

const sqliteTypes: Record<ColumnKind, string> = {
  text: 'TEXT',
  real: 'REAL',
  integer: 'INTEGER',
  boolean: 'INTEGER',
  timestamp: 'TEXT',
  date: 'TEXT',
  time: 'TEXT',
  json: 'TEXT',
};

const postgresTypes: Record<ColumnKind, string> = {
  // Byte order, as SQLite's BINARY: sorts and keyset cursors agree on both databases whatever the server's locale.
  text: 'text collate "C"',
  real: 'double precision',
  integer: 'bigint',
  boolean: 'boolean',
  timestamp: 'timestamptz',
  date: 'date',
  time: 'time',
  json: 'jsonb',
};

export const sqliteDialect: Dialect = {
  name: 'sqlite',
  columnType: (kind) => sqliteTypes[kind],
  encodeBoolean: (v) => (v ? 1 : 0),
  decodeBoolean: (v) => v === 1 || v === 1n || v === true,
  encodeJson: (v) => JSON.stringify(v),
  decodeJson: (v) => (typeof v === 'string' ? JSON.parse(v) : v),
  isUniqueViolation: (err) => {
    const code = errCode(err);
    return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
  },
  // An insert naming a dropped column: "table … has no column named …"; other statements: "no such column: …".
  isSchemaChanged: (err) => errCode(err) === 'SQLITE_ERROR' && /no such (column|table)|has no column named/.test(messageOf(err)) && USER_TABLE_NAME.test(messageOf(err)),
  isTooManyColumns: (err) => errCode(err) === 'SQLITE_ERROR' && /too many columns/.test(messageOf(err)),
  // One write transaction at a time, each taking the lock as it begins (BEGIN IMMEDIATE, database.ts):
  // none is given up for another, and a migration's transaction already keeps other instances waiting.
  isRetryable: () => false,
  lockMigrations: async () => {},
  canAlterNullability: false,
  lockRows: false,
  writingWith: false,
  textKeyPrefix: null,
  rowsPerInsert: () => 1,
  nullsFirstByDefault: (direction) => direction === 'asc',
  listContains(column, value) {
    const element = sql`select 1 from json_each(${sql.ref(column)}) as e`;
    if (typeof value === 'boolean') return sql<SqlBool>`exists (${element} where e.type = ${value ? 'true' : 'false'})`;
    if (typeof value === 'number') return sql<SqlBool>`exists (${element} where e.type in ('integer', 'real') and e.value = ${value})`;
    return sql<SqlBool>`exists (${element} where e.type = 'text' and e.value = ${value})`;
  },
  // The connection replaces SQLite's ASCII-only lower() with a Unicode one (database.ts).
  lower: (expr) => sql<string>`lower(${expr})`,
  nextTimestamp: (column, now) =>
    sql`case when ${sql.ref(column)} < ${now} then ${now} else strftime('%Y-%m-%dT%H:%M:%fZ', ${sql.ref(column)}, '+0.001 seconds') end`,
  upsertInserted: null,
};

export const postgresDialect: Dialect = {
  name: 'postgres',
  columnType: (kind) => postgresTypes[kind],
  encodeBoolean: (v) => v,
  decodeBoolean: (v) => v === true,
  // node-postgres sends objects as JSON text itself, but arrays as PostgreSQL arrays: stringify both.
  encodeJson: (v) => JSON.stringify(v),
  decodeJson: (v) => (typeof v === 'string' ? JSON.parse(v) : v),
  isUniqueViolation: (err) => errCode(err) === '23505',
  isSchemaChanged: (err) => (errCode(err) === '42703' || errCode(err) === '42P01') && USER_TABLE_NAME.test(messageOf(err)),
  isTooManyColumns: (err) => errCode(err) === '54011',
  // deadlock_detected, serialization_failure.
  isRetryable: (err) => errCode(err) === '40P01' || errCode(err) === '40001',
  // A lock of the whole database's, released when the transaction ends.
  lockMigrations: async (tx) => {
    await sql`select pg_advisory_xact_lock(hashtext('rowhouse-migrate'))`.execute(tx);
  },
  canAlterNullability: true,
  lockRows: true,
  writingWith: true,
  // 256 characters are at most 1 KiB of UTF-8: with a 128-character id the entry stays well within a B-tree page's third.
  textKeyPrefix: 256,
  // PostgreSQL binds at most 65,535 parameters per statement.
  rowsPerInsert: (columns) => Math.max(1, Math.floor(30_000 / columns)),
  nullsFirstByDefault: (direction) => direction === 'desc',
  listContains: (column, value) => sql<SqlBool>`${sql.ref(column)} @> ${JSON.stringify([value])}::jsonb`,
  // Text columns are COLLATE "C", whose lower() folds ASCII only; the database's own collation folds every letter.
  lower: (expr) => sql<string>`lower(${expr} collate "default")`,
  nextTimestamp: (column, now) =>
    sql`case when ${sql.ref(column)} < ${now}::timestamptz then ${now}::timestamptz else ${sql.ref(column)} + interval '1 millisecond' end`,
  // A freshly inserted row version has no xmax; the one ON CONFLICT DO UPDATE writes carries the
  // row lock the upsert took, so its xmax is the writing transaction.
  upsertInserted: sql<boolean>`(xmax = 0)`,
};
