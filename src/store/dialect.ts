/**
 * The contracts each database's adapter (sqlite/, postgres/) fulfils: every difference between
 * SQLite and PostgreSQL that the store cares about, as required, named members. The rest of the
 * code asks these instead of testing which database it runs on. Interfaces only.
 */
import type { CompiledQuery, Kysely, QueryExecutorProvider, RawBuilder, SqlBool, sql } from 'kysely';
import type { ColumnKind, ValueCodec } from '../domain/value-codec.ts';
import type { RecordValueSql } from './record-value-sql.ts';
import type { RawRow } from '../domain/row.ts';
import type { TableDef } from '../domain/table.ts';
import type { AnswerWithWrite, EntryMaker, LoneWrite, PendingEntries } from './change-entries.ts';
import type { PlannerStatistics } from './statistics.ts';
import type { AggregateSql } from './aggregate-dialect.ts';
import type { LinkSql } from './link-dialect.ts';
import type { PreparedStatementsMode } from '../config.ts';

export type { ColumnKind } from '../domain/value-codec.ts';

/**
 * The query builder over whichever database DATABASE_URL names, untyped: user tables (rows_<hex>)
 * and their columns are created at run time. Code that reads or writes the metadata tables takes
 * the same connection as a `MetaDb` (meta-schema.ts), which needs no cast either way.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Db = Kysely<any>;

export type DialectName = 'sqlite' | 'postgres';

export type { RecordValueSql } from './record-value-sql.ts';

/** Values are bound as the driver wants them, and read back, through the codec's methods. */
export interface Dialect extends ValueCodec {
  /** For messages, and for the released migrations that run on one database only; other code asks the members below. */
  name: DialectName;
  /** The database's name for people (the start line) and for caches' keys. */
  label: string;
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
  /**
   * An expression, for a statement inside a transaction, that holds a lock named `name` until the
   * transaction ends, or is false at once when another transaction (of any instance) holds it (an
   * Idempotency-Key in flight). SQLite: null, as it runs one write transaction at a time.
   */
  tryLock(name: string): RawBuilder<boolean> | null;
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
  /**
   * `value` is among the values of the uncorrelated `subquery` (a key set, such as the rows linking
   * to one row), written so that the database reads the set first and finds the rows by their key
   * rather than probing the set from each row of a list's order (store/links/link-sql.ts).
   */
  inKeySet(value: RawBuilder<unknown>, subquery: RawBuilder<unknown>): RawBuilder<SqlBool>;
  /** Some element of the JSON array in `column` equals the scalar `value`, with its JSON type. */
  listContains(column: string, value: string | number | boolean): RawBuilder<SqlBool>;
  /** The text at `path` (object keys) within the JSON in `column`; NULL where there is none (a flow's trigger table). */
  jsonTextAt(column: string, path: readonly string[]): RawBuilder<string | null>;
  /** Every element of the JSON array in `column` is one of `values` (texts): an API key's tables within another's. */
  jsonListWithin(column: string, values: readonly string[]): RawBuilder<SqlBool>;
  /** Lower case of every letter, not only ASCII (for case-insensitive matching). */
  lower(expr: RawBuilder<unknown> | ReturnType<typeof sql.ref>): RawBuilder<string>;
  /** `now`, or 1 ms past the column's value when the clock has not moved beyond it: a timestamp that always moves. */
  nextTimestamp(column: string, now: unknown): RawBuilder<unknown>;
  /**
   * In the RETURNING list of INSERT … ON CONFLICT DO UPDATE: whether the row was inserted rather
   * than updated. null where the database cannot tell (SQLite), which then upserts in two steps.
   */
  upsertInserted: RawBuilder<boolean> | null;
  /** A record's values as JSON text, in SQL (record-json-sql.ts). */
  recordValues: RecordValueSql;
  /** The SQL of aggregates where the databases differ: date buckets in a time zone, min and max (aggregate-dialect.ts). */
  aggregates: AggregateSql;
  /** The SQL of link maintenance and `expand` where the databases differ: lists bound as one parameter, link values followed (link-dialect.ts). */
  links: LinkSql;
  /** What numbers a new table's change entries (PostgreSQL: its sequence, change-numbering.ts), made with the table in `tx`. */
  createChangeNumbers(tx: QueryExecutorProvider, tableId: string): Promise<void>;
  /** What numbered a dropped table's change entries, dropped with it. */
  dropChangeNumbers(tx: QueryExecutorProvider, tableId: string): Promise<void>;
}

/** Who wrote, and when: every entry of a write's takes them. */
export interface EntryContext {
  memberId: string;
  now: string;
}

/**
 * The change log's statements, per database (sqlite/change-numbering.ts, postgres/change-numbering.ts):
 * how a transaction's entries take their numbers and are written, and how far a reader may read.
 * The algorithm over them is the change log's (change-log.ts).
 */
export interface ChangeNumbering {
  /**
   * A single-row write outside any transaction (`write` returns the row's columns) made together
   * with its entry, atomically, with no transaction of its own. Answers the rows written (none:
   * nothing matched, no entry). (As a query's result: PostgreSQL's is the statement's own, with no
   * promise of its own on the way.) With `answer` (a create's), the request's answer is kept in the
   * same step, its body the row's record as the entry keeps it (`log.recordText`).
   */
  writeAlone(db: Db, table: TableDef, ctx: EntryContext, write: CompiledQuery, what: LoneWrite, log: EntryMaker, answer?: AnswerWithWrite): Promise<{ rows: RawRow[] }>;
  /** Writes a table's pending entries in the transaction `tx`, numbered, a statement per PER_STATEMENT of them. */
  writeEntries(tx: Db, pending: PendingEntries, log: EntryMaker): Promise<void>;
  /**
   * SQLite: the create entries of rows inserted one after another, by rowid (ChangeLog.insertedRows),
   * after the table's entries `pending` holds (which it empties).
   */
  insertedRows(tx: Db, pending: PendingEntries, ctx: EntryContext, first: number, last: number, log: EntryMaker): void;
  /**
   * PostgreSQL: new rows (each as RowStore.newRow makes them: every column, the system columns
   * those of new rows of `ctx`) inserted with their create entries (ChangeLog.insertWithEntries).
   */
  insertWithEntries(tx: Db, table: TableDef, ctx: EntryContext, rows: readonly (readonly unknown[])[], log: EntryMaker): Promise<void>;
  /**
   * In the transaction `tx`, no entry of the table pending: `update` (PostgreSQL: returning every
   * column and `rh_k`, the row's place in `ids`) run with each row's update entry naming
   * `changedFields`, its record rendered by the database, numbered in the order of `ids` (the ids
   * of the rows it may update; those that are gone are not). Answers the rows updated.
   */
  updateWithEntries(tx: Db, table: TableDef, ctx: EntryContext, update: CompiledQuery, ids: readonly string[], changedFields: readonly string[], log: EntryMaker): Promise<number>;
  /** The highest number of the table's entries a reader may pass: no entry numbered up to it will commit later. */
  readableThrough(db: Db, tableId: string): Promise<number>;
  /** A table being deleted: a delete entry for each of its rows, numbered in id order, by one statement in `tx`. Answers whether it wrote any. */
  tableDeleted(tx: Db, table: { id: string; physical: string }, ctx: EntryContext): Promise<boolean>;
}

/** An export's read of every row of a selection (RowStore.scan, Database.scan). */
export interface RowScan {
  /** The selection's statement, reading at most `limit` rows (null: all), in order. */
  query(limit: number | null): CompiledQuery;
  /** At most this many rows (null: all). */
  limit: number | null;
  /** Rows per chunk. */
  chunk: number;
  /** The selection read page by page, by keyset, for a database that reads it so. */
  pages(): AsyncGenerator<unknown[][]>;
}

/**
 * A database, as each adapter (sqlite/open-sqlite.ts, postgres/open-postgres.ts) opens it: the
 * query builder over it and what differs between databases, as required, named members.
 */
export interface Database {
  db: Db;
  dialect: Dialect;
  /** Keeps the planner's statistics of user tables up to date as rows are written. */
  statistics: PlannerStatistics;
  /** The change log's statements on this database (ChangeLog). */
  changeNumbering: ChangeNumbering;
  /** How instances tell one another that a table's change log grew (the change streams wake on it). */
  changeSignals: ChangeSignals;
  /** Cheap round trip used by /readyz. */
  ping(): Promise<void>;
  close(): Promise<void>;
  /**
   * Every row of an export's selection, as arrays, a chunk at a time, in one snapshot where the
   * database can (SQLite: one statement on a connection of its own; PostgreSQL: one cursor where
   * the order needs a sort), else by keyset pages (`scan.pages`). Stops when the consumer stops asking.
   */
  scan(scan: RowScan): AsyncGenerator<unknown[][]>;
  /**
   * A number that moves whenever API keys, members, tables or fields may have changed, whoever
   * changed them; undefined while that cannot be known (no cache may then be trusted; SQLite's
   * :memory:). Called on every lookup, so cheap: see MetadataCache.
   */
  metadataVersion(): number | undefined;
  /**
   * Where `dialect.rowsPerInsert` is 1 (SQLite), in a transaction: runs one statement once for
   * each row of arguments, synchronously, on the main connection, without a trip through the query
   * builder for every row. An error carries the index of the row that failed (`rowIndex`).
   * Answers the rowids of the first and the last row inserted. PostgreSQL throws: it never inserts
   * a row a statement.
   */
  insertEach(sql: string, rows: readonly (readonly unknown[])[]): { first: number; last: number };
  /** For the length of an atomic import's transaction: the connection's settings for it; answers what puts them back (SQLite: sqlite/import-settings.ts). */
  tuneForImport(): () => void;
  /**
   * From now on the statement `sql` runs as a named prepared statement, parsed and planned once
   * per connection (PostgreSQL: postgres/prepared-statements.ts; SQLite's statement cache does so
   * for every statement). For single-row statements by id only.
   */
  prepare(sql: string): void;
  /**
   * Deletes the kept answers expired at `now` (IdempotencyStore.sweep), answering how many, where
   * the database has a way of its own: SQLite, without an index on their expiry (sqlite/idempotency-sweep.ts).
   * Else by that index.
   */
  sweepExpiredAnswers?(now: string): Promise<number>;
}

/**
 * Word between instances that a table's change log grew: each instance announces its commits and
 * hears the others' (PostgreSQL: NOTIFY on the metadata listener's connection,
 * postgres/change-signals.ts). SQLite serves one instance: there is no one to tell or hear.
 * A signal carries no change: a listener reads the log itself.
 */
export interface ChangeSignals {
  /** This instance committed entries of the table: tell the others (sent soon, coalesced). */
  announce(tableId: string): void;
  /**
   * Calls `heard` with a table id when another instance announces it, and with null when any table
   * may have changed unheard (listening began or began again). Answers what stops it.
   */
  listen(heard: (tableId: string | null) => void): () => void;
  /** Whether other instances' announcements reach this one now (false: look in the log more often). */
  live(): boolean;
}

export interface DatabaseOptions {
  /**
   * PostgreSQL: called with each statement sent to the server, BEGIN and COMMIT included (tests
   * count round trips with it). SQLite's reads mostly bypass the query builder, so it has none.
   */
  onQuery?: (sql: string) => void;
  /** PostgreSQL: where the LISTEN connection goes (DATABASE_LISTEN_URL); default the database URL. */
  databaseListenUrl?: string;
  /** PostgreSQL: named prepared statements (ROWHOUSE_PREPARED_STATEMENTS); default auto. */
  preparedStatements?: PreparedStatementsMode;
}
