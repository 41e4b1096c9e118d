import fs from 'node:fs';
import path from 'node:path';
import type SqliteDatabase from 'better-sqlite3';
import { CompiledQuery, type DatabaseConnection, type Driver, Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import type pg from 'pg';
import { type Dialect, postgresDialect, sqliteDialect } from './dialect.ts';
import { classifyDatabaseError } from './database-errors.ts';
import { MetadataListener, reportingMetadataWrites } from './metadata-watch.ts';
import { PreparedStatements } from './prepared-statements.ts';
import { backgroundCheckpoints } from './sqlite-checkpoints.ts';
import { type PlannerStatistics, driverPath, postgresStatistics, sqliteStatistics } from './statistics.ts';

/**
 * The query builder over whichever database DATABASE_URL names, untyped: user tables (rows_<hex>)
 * and their columns are created at run time. Code that reads or writes the metadata tables takes
 * the same connection as a `MetaDb` (meta-schema.ts), which needs no cast either way.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Db = Kysely<any>;

export interface Database {
  db: Db;
  dialect: Dialect;
  /** Keeps the planner's statistics of user tables up to date as rows are written. */
  statistics: PlannerStatistics;
  /** Cheap round trip used by /readyz. */
  ping(): Promise<void>;
  close(): Promise<void>;
  /**
   * SQLite only: a query's rows as arrays, read lazily on a connection of its own, so a long read
   * (an export) holds no lock the other requests wait for and sees one snapshot throughout.
   * Close the iterator (return()) when done early.
   */
  iterate?(query: { sql: string; parameters: readonly unknown[] }): IterableIterator<unknown[]>;
  /**
   * PostgreSQL only: a query's rows as arrays, `size` at a time, read through a cursor in one
   * read-only transaction on a connection of its own (never one of the pool's, which requests
   * need): one snapshot, and one sort where its order needs one. Ends the transaction and the
   * connection when the reading ends or stops (return()).
   */
  cursor?(query: { sql: string; parameters: readonly unknown[] }, size: number): AsyncGenerator<unknown[][]>;
  /**
   * A number that moves whenever API keys, members, tables or fields may have changed, whoever
   * changed them; undefined while that cannot be known (no cache may then be trusted). Called on
   * every lookup, so cheap: see MetadataCache.
   */
  metadataVersion?(): number | undefined;
  /**
   * SQLite only: runs one statement once for each row of arguments, synchronously, on the main
   * connection: inside the caller's transaction, a bulk insert without a trip through the query
   * builder for every row. An error carries the index of the row that failed (`rowIndex`).
   * Answers the rowids of the first and the last row inserted, for an INSERT.
   */
  runEach?(sql: string, rows: readonly (readonly unknown[])[]): { first: number; last: number };
  /**
   * SQLite: runs one statement at once on the main connection (where the open transaction is), and
   * answers the rows it returns: for statements every write makes, without the query builder's
   * round of promises.
   */
  runNow?(sql: string, parameters: readonly unknown[]): Record<string, unknown>[];
  /**
   * SQLite: runs `work` at once in a savepoint on the main connection, once no other transaction
   * holds the connection, and answers after its commit (rolled back to the savepoint when it
   * throws); the writes of one turn of the event loop commit together (groupCommits). `run` is
   * runNow. For a single-row write and its change entry: one step where the query builder's
   * transaction takes five rounds of promises.
   */
  writeNow?<T>(work: (run: (sql: string, parameters: readonly unknown[]) => Record<string, unknown>[]) => T): Promise<T>;
  /**
   * PostgreSQL: from now on the statement `sql` runs as a named prepared statement, parsed and
   * planned once per connection (prepared-statements.ts). For single-row statements by id only.
   */
  prepare?(sql: string): void;
}

export interface DatabaseOptions {
  /**
   * PostgreSQL: called with each statement sent to the server, BEGIN and COMMIT included (tests
   * count round trips with it). SQLite's reads mostly bypass the query builder, so it has none.
   */
  onQuery?: (sql: string) => void;
}

/**
 * SQLite: a synchronous read on the read-only connection, for a query outside any transaction
 * (a Kysely transaction is another object, so it is never found here and reads its own work).
 */
const directReaders = new WeakMap<Db, (sql: string, parameters: readonly unknown[]) => Record<string, unknown>[]>();

const MAX_ATTEMPTS = 5;

/**
 * Every write runs here: one transaction. Concurrent requests may take row locks in opposite
 * orders; PostgreSQL then aborts one of them, which is run again from the start. (SQLite runs
 * one transaction at a time, so it never needs to.)
 */
export async function inTransaction<T>(database: Database, work: (tx: Db) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const hooks: TransactionHooks = { beforeCommit: [], afterCommit: [] };
    try {
      const result = await database.db.transaction().execute(async (tx) => {
        transactionHooks.set(tx, hooks);
        const done = await work(tx);
        // Work that registers more before-commit work (rare) is run too, in order.
        for (let i = 0; i < hooks.beforeCommit.length; i++) await hooks.beforeCommit[i]();
        return done;
      });
      for (const then of hooks.afterCommit) then();
      return result;
    } catch (err) {
      if (attempt >= MAX_ATTEMPTS || classifyDatabaseError(err, database.dialect) !== 'retryable') throw err;
      // A moment's random wait, so the two that collided do not collide again at once.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * attempt));
    }
  }
}

interface TransactionHooks {
  beforeCommit: (() => Promise<void>)[];
  afterCommit: (() => void)[];
}
const transactionHooks = new WeakMap<Db, TransactionHooks>();

/**
 * Runs `then` once the transaction `tx` has committed (never after a rollback); outside a
 * transaction (each statement commits by itself), at once. For work that must not happen unless
 * the change is there to stay, like deleting the bytes of a file the change let go of.
 */
export function afterCommit(tx: Db, then: () => void): void {
  const hooks = transactionHooks.get(tx);
  if (hooks) hooks.afterCommit.push(then);
  else if (tx.isTransaction) throw new Error('afterCommit: a transaction not begun by inTransaction');
  else then();
}

/**
 * Runs `last` in the transaction `tx` after its work, just before it commits: for statements
 * that are best made once per transaction, as late as possible (the change log takes its
 * sequence numbers there, holding its lock for no longer than the commit). `tx` must be a
 * transaction begun by inTransaction.
 */
export function beforeCommit(tx: Db, last: () => Promise<void>): void {
  const hooks = transactionHooks.get(tx);
  if (!hooks) throw new Error('beforeCommit: a transaction not begun by inTransaction');
  hooks.beforeCommit.push(last);
}

/** Runs a compiled SELECT, on SQLite's read connection when outside a transaction. */
export async function readRows(db: Db, query: { sql: string; parameters: readonly unknown[] }): Promise<Record<string, unknown>[]> {
  const direct = directReaders.get(db);
  if (direct) return direct(query.sql, query.parameters);
  return (await db.executeQuery(query as CompiledQuery<Record<string, unknown>>)).rows;
}

/** Work in the background has no request to answer with its error: it is reported as a warning. */
const warnBackground = (what: string) => (err: unknown) => process.emitWarning(`${what}: ${(err as Error)?.message ?? String(err)}`);

/** An in-memory database cannot be read by a second connection: its (small, short-lived) tables go without. */
const inlineStatistics: PlannerStatistics = { noteWrites: () => {}, settled: async () => {}, close: async () => {} };

/**
 * A statement whose rows are objects made here from better-sqlite3's arrays (raw mode): the objects
 * better-sqlite3 makes cost twice as much. A 51-row page of the benchmark table (14 columns):
 * 195 µs as its objects, 101 µs as arrays, 113 µs as arrays made into objects here (a scratch loop).
 * Only for statements whose text has no `*`: their result columns are named by the text alone, so
 * the names read once at prepare stay right when SQLite prepares them again after a schema change.
 */
class ObjectRows {
  readonly reader = true;
  private readonly names: string[];

  constructor(private readonly stmt: SqliteDatabase.Statement) {
    stmt.raw(true);
    this.names = stmt.columns().map((c) => c.name);
  }

  all(...parameters: unknown[]): Record<string, unknown>[] {
    const arrays = this.stmt.all(...parameters) as unknown[][];
    const rows: Record<string, unknown>[] = new Array(arrays.length);
    for (let i = 0; i < arrays.length; i++) rows[i] = this.row(arrays[i]);
    return rows;
  }

  *iterate(...parameters: unknown[]): IterableIterator<Record<string, unknown>> {
    for (const values of this.stmt.iterate(...parameters) as IterableIterator<unknown[]>) yield this.row(values);
  }

  run(...parameters: unknown[]): SqliteDatabase.RunResult {
    return this.stmt.run(...parameters);
  }

  private row(values: unknown[]): Record<string, unknown> {
    const { names } = this;
    const row: Record<string, unknown> = {};
    for (let k = 0; k < names.length; k++) row[names[k]] = values[k];
    return row;
  }
}

type CachedStatement = SqliteDatabase.Statement | ObjectRows;

/** better-sqlite3 compiles a statement on every prepare(); Kysely prepares per query, so keep them. */
function withStatementCache(raw: SqliteDatabase.Database, onUse?: (source: string) => void, size = 1000) {
  const cache = new Map<string, CachedStatement>();
  return {
    close: () => raw.close(),
    prepare(source: string): CachedStatement {
      onUse?.(source);
      let stmt = cache.get(source);
      if (stmt) {
        // Refresh its place so the least recently used statement is the one dropped.
        cache.delete(source);
      } else {
        const prepared = raw.prepare(source);
        stmt = prepared.reader && !source.includes('*') ? new ObjectRows(prepared) : prepared;
        if (cache.size >= size) cache.delete(cache.keys().next().value as string);
      }
      cache.set(source, stmt);
      return stmt;
    },
  };
}

/** What every connection needs for SQLite to answer as PostgreSQL does. */
function sameSemantics(conn: SqliteDatabase.Database): void {
  conn.pragma('busy_timeout = 5000');
  // LIKE is case-sensitive on PostgreSQL; make SQLite agree.
  conn.pragma('case_sensitive_like = ON');
  // SQLite's lower() folds ASCII only; PostgreSQL's folds every letter. Make iLike agree.
  conn.function('lower', { deterministic: true }, (s: unknown) => (typeof s === 'string' ? s.toLowerCase() : s));
}

/**
 * The connection for reads outside transactions. It maps the first 256 MiB of the database file
 * into memory rather than copy each page it reads out of the OS's cache: a random row by id in a
 * 260 MB file took 9.5 µs instead of 12 (a scratch loop over 200,000 rows), and the service spent
 * 13% less CPU on a get by id, 6-8% on a list page (two builds side by side). The mapped pages are
 * the OS's file cache, counted in the process's RSS as RssFile once touched, never its own heap.
 * Exports read on connections of their own without the map: a whole-table read would map it all.
 */
function requestReader(Sqlite: typeof SqliteDatabase, file: string): SqliteDatabase.Database {
  const conn = new Sqlite(file, { readonly: true });
  conn.pragma('mmap_size = 268435456');
  sameSemantics(conn);
  return conn;
}

/**
 * SQLite transactions take the write lock when they begin (BEGIN IMMEDIATE), waiting for it as
 * long as busy_timeout allows. A deferred one that read first could not take it later if another
 * connection (the statistics worker) had committed meanwhile: SQLite would fail it at once.
 */
class ImmediateSqliteDialect extends SqliteDialect {
  override createDriver(): Driver {
    const driver = super.createDriver();
    driver.beginTransaction = async (connection) => {
      await connection.executeQuery(CompiledQuery.raw('begin immediate'));
    };
    return driver;
  }
}

type Run = (sql: string, parameters: readonly unknown[]) => Record<string, unknown>[];

/**
 * SQLite's writeNow, with group commit: the single-row writes of one turn of the event loop share
 * one transaction, each in a savepoint of its own, and one commit. A commit writes the pages the
 * writes changed to the log, and writes of one turn change many of the same pages (the change
 * log's, its counter's, an index's inner pages), so one commit for several costs little more than
 * for one. A write's promise settles after the commit: none is answered before it is durable. A
 * write that throws is rolled back to its savepoint alone; when SQLite has rolled the whole
 * transaction back (a full disk), or the commit fails, every write of the group fails with it.
 * `hold` runs the commit while no transaction of the query builder's holds the connection.
 */
function groupCommits(raw: SqliteDatabase.Database, run: Run, hold: (commit: () => Promise<void>) => Promise<void>): NonNullable<Database['writeNow']> {
  interface Member {
    work: (run: Run) => unknown;
    /** What the work answered, or threw (then it was rolled back to its savepoint). */
    outcome?: { value: unknown } | { error: unknown };
    resolve: (value: unknown) => void;
    reject: (error: unknown) => void;
  }
  interface Group {
    members: Member[];
    /** Whether its transaction has begun: a write joining then runs at once. */
    began: boolean;
    /** Why the whole group failed (nothing of it is committed). */
    failed?: { error: unknown };
  }
  let open: Group | undefined;
  const runMember = (group: Group, member: Member) => {
    if (group.failed) return;
    run('savepoint write_now', []);
    try {
      member.outcome = { value: member.work(run) };
      run('release write_now', []);
    } catch (error) {
      member.outcome = { error };
      if (!raw.inTransaction) group.failed = { error };
      else {
        run('rollback to write_now', []);
        run('release write_now', []);
      }
    }
  };
  const settle = (group: Group) => {
    for (const m of group.members) {
      if (m.outcome && 'error' in m.outcome) m.reject(m.outcome.error);
      else if (group.failed || !m.outcome) m.reject(group.failed?.error ?? new Error('writeNow: the write did not run'));
      else m.resolve(m.outcome.value);
    }
  };
  const commit = async (group: Group) => {
    try {
      run('begin immediate', []);
      group.began = true;
      for (const member of group.members) runMember(group, member);
      // The writes that come in this turn of the event loop join; then the group commits.
      await new Promise((resolve) => setImmediate(resolve));
      if (!group.failed) run('commit', []);
    } catch (error) {
      group.failed ??= { error };
    } finally {
      if (open === group) open = undefined;
      if (raw.inTransaction) run('rollback', []);
      settle(group);
    }
  };
  return <T>(work: (run: Run) => T) =>
    new Promise<T>((resolve, reject) => {
      const member: Member = { work, resolve: resolve as (value: unknown) => void, reject };
      if (open && !open.failed) {
        open.members.push(member);
        if (open.began) runMember(open, member);
        return;
      }
      const group: Group = { members: [member], began: false };
      open = group;
      hold(() => commit(group)).catch((error: unknown) => {
        // Not run at all (the connection's holder failed): nothing of the group was written.
        group.failed ??= { error };
        if (open === group) open = undefined;
        settle(group);
      });
    });
}

function openSqlite(Sqlite: typeof SqliteDatabase, file: string): Database {
  if (file !== ':memory:') fs.mkdirSync(path.dirname(file), { recursive: true });
  const raw = new Sqlite(file);
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = NORMAL');
  raw.pragma('cache_size = -65536');
  raw.pragma('foreign_keys = ON');
  sameSemantics(raw);
  // Checkpoints are the worker's (sqlite-checkpoints.ts); this connection makes one only when the
  // log has grown to 10,000 pages (40 MiB) regardless, as a backstop.
  const checkpoints = file === ':memory:' ? undefined : backgroundCheckpoints(file, driverPath, warnBackground('checkpoint'));
  if (checkpoints) raw.pragma('wal_autocheckpoint = 10000');
  // What may change the metadata: a statement naming a metadata table (the query builder quotes
  // every name), or the end of a transaction that may have held one. Row writes leave the counter be.
  // Any statement but a read may write, and so call for a checkpoint.
  const main = withStatementCache(raw, (source) => {
    if (source.includes('"rh_') || /^(commit|rollback)\b/i.test(source)) forgetVersion();
    if (checkpoints && !source.startsWith('select')) checkpoints.wrote();
  });
  const db: Db = new Kysely({ dialect: new ImmediateSqliteDialect({ database: main }) });
  // Reads outside transactions go to a read-only connection of their own (WAL lets it read while
  // the main connection writes): they neither wait behind a write transaction nor see its work.
  // A second connection to :memory: would be another database, so that one reads in line.
  let reader: SqliteDatabase.Database | undefined;
  const exporters = new Set<SqliteDatabase.Database>();
  /**
   * The metadata counter's query, on the main connection and on the reader. It is read on the main
   * connection whenever no transaction is open there: that one is up to date with this process's own
   * commits, where the reader, after each of them, must take up the log afresh (with its map of the
   * file, 30 µs a read: a single-row patch spent 8% of its time there). Inside a transaction the
   * main connection would see uncommitted changes, so the reader answers.
   */
  const counterSql = 'select n from rh_metadata_version where id = 1';
  let counterOnMain: SqliteDatabase.Statement | undefined;
  let counterOnReader: SqliteDatabase.Statement | undefined;
  /**
   * The counter as read in this turn of the event loop: the requests a turn serves (they make no
   * I/O on SQLite) read it once, not once per lookup. Forgotten at the turn's end, so another
   * process's change is seen in the next turn, and at once whenever this process may change the
   * metadata on its main connection, so its own changes are seen by the very next request.
   */
  let versionSeen: number | undefined;
  const forgetVersion = () => {
    versionSeen = undefined;
  };
  const readConnection = () => {
    if (!reader) {
      reader = requestReader(Sqlite, file);
    }
    return reader;
  };
  let statements: ReturnType<typeof withStatementCache> | undefined;
  if (file !== ':memory:') {
    directReaders.set(db, (source, parameters) => {
      statements ??= withStatementCache(readConnection());
      return statements.prepare(source).all(...parameters) as Record<string, unknown>[];
    });
  }
  // Never `PRAGMA optimize`: it analyses a sample, and a sample of an index sorted by status sees
  // one status. Statistics are exact, taken as tables grow (statistics.ts).
  const statistics =
    file === ':memory:'
      ? inlineStatistics
      : sqliteStatistics(
          file,
          () => raw.prepare("select 1 from sqlite_schema where type = 'table' and name like 'rows!_%' escape '!'").get() !== undefined,
          async () => {
            // A connection loads statistics with the schema: the read connection is opened anew, the main one told.
            reader?.close();
            reader = undefined;
            statements = undefined;
            counterOnReader = undefined;
            await sql`analyze sqlite_schema`.execute(db);
          },
          warnBackground('planner statistics'),
        );
  const runNow = (source: string, parameters: readonly unknown[]) => {
    const statement = main.prepare(source);
    return statement.reader ? (statement.all(...parameters) as Record<string, unknown>[]) : (statement.run(...parameters), []);
  };
  return {
    db,
    dialect: sqliteDialect,
    statistics,
    runNow,
    writeNow: groupCommits(raw, runNow, (commit) => db.connection().execute(commit)),
    runEach(source, rows) {
      const statement = main.prepare(source);
      let first = 0;
      let last = 0;
      rows.forEach((row, rowIndex) => {
        try {
          last = Number(statement.run(row).lastInsertRowid);
        } catch (err) {
          throw Object.assign(err as Error, { rowIndex });
        }
        if (rowIndex === 0) first = last;
      });
      return { first, last };
    },
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    ...(file === ':memory:'
      ? {}
      : {
          // The counter migration 4's triggers bump (see versionSeen for when it is read again).
          metadataVersion: () => {
            if (versionSeen !== undefined) return versionSeen;
            try {
              const counter = raw.inTransaction
                ? (counterOnReader ??= readConnection().prepare(counterSql).pluck())
                : (counterOnMain ??= raw.prepare(counterSql).pluck());
              versionSeen = counter.get() as number | undefined;
            } catch {
              return undefined; // not migrated yet: nothing to trust
            }
            setImmediate(forgetVersion);
            return versionSeen;
          },
          iterate: (query: { sql: string; parameters: readonly unknown[] }) => {
            // A connection of its own: its snapshot lasts as long as the export, and must not
            // become that of the other reads (a new row unseen, a revoked key still accepted).
            const conn = new Sqlite(file, { readonly: true });
            sameSemantics(conn);
            exporters.add(conn);
            const rows = conn.prepare(query.sql).raw(true).iterate(...query.parameters) as IterableIterator<unknown[]>;
            const done = () => {
              rows.return?.();
              exporters.delete(conn);
              if (conn.open) conn.close();
            };
            return {
              [Symbol.iterator]() {
                return this;
              },
              next() {
                const r = rows.next();
                if (r.done) done();
                return r;
              },
              return(value?: unknown) {
                done();
                return { done: true as const, value };
              },
            };
          },
        }),
    close: async () => {
      await statistics.close();
      await checkpoints?.close();
      for (const conn of exporters) {
        try {
          conn.close();
        } catch {
          // An export still reading: its statement ends with the process.
        }
      }
      reader?.close();
      await db.destroy();
    },
  };
}

let pgDriver: Promise<typeof pg> | undefined;

const UTC_TIMESTAMP = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?\+00$/;

/**
 * A timestamptz as the API writes it (`YYYY-MM-DDTHH:mm:ss.sssZ`), straight from PostgreSQL's
 * text when the session speaks UTC (every connection is set to): a page of 51 rows holds 150
 * timestamps, and going through Date took 7% of its time. null: another form, for Date to read.
 */
function utcTimestamp(text: string): string | null {
  const m = UTC_TIMESTAMP.exec(text);
  return m && `${m[1]}T${m[2]}.${(m[3] ?? '').padEnd(3, '0').slice(0, 3)}Z`;
}

/** pg, loaded on first use, with its type parsers (global to the module) set once. */
function loadPg(): Promise<typeof pg> {
  pgDriver ??= import('pg').then(({ default: driver }) => {
    const { types } = driver;
    // Dates, times and timestamps come back as the strings the API speaks, never as local-time Date objects.
    const parseTimestamptz = types.getTypeParser(types.builtins.TIMESTAMPTZ);
    types.setTypeParser(types.builtins.TIMESTAMPTZ, (v: string) => utcTimestamp(v) ?? (parseTimestamptz(v) as Date).toISOString());
    types.setTypeParser(types.builtins.DATE, (v: string) => v);
    types.setTypeParser(types.builtins.TIME, (v: string) => v);
    types.setTypeParser(types.builtins.INT8, (v: string) => Number(v));
    return driver;
  });
  return pgDriver;
}

function openPostgres(driver: typeof pg, url: string, options: DatabaseOptions): Database {
  // Connections end after a quarter of an hour (each then opened anew as needed), and with them
  // the statements prepared on them for table versions since replaced.
  const pool = new driver.Pool({ connectionString: url, max: 10, maxLifetimeSeconds: 900 });
  // An idle client that errors (server restart) must not crash the process.
  pool.on('error', () => {});
  const prepared = new PreparedStatements();
  const listener = new MetadataListener(driver, url);
  // Every session speaks UTC, the pool's and the cursors' alike: utcTimestamp reads timestamps so.
  const inUtc = "set time zone 'UTC'";
  const sessionInUtc = async (connection: DatabaseConnection) => {
    await connection.executeQuery(CompiledQuery.raw(inUtc));
  };
  const dialect = reportingMetadataWrites(new PostgresDialect({ pool: prepared.pool(pool), onCreateConnection: sessionInUtc }), () => listener.changed());
  const { onQuery } = options;
  const db: Db = new Kysely({ dialect, ...(onQuery ? { log: (event) => onQuery(event.query.sql) } : {}) });
  const statistics = postgresStatistics(db, warnBackground('planner statistics'));
  const cursors = new Set<pg.Client>();
  return {
    db,
    dialect: postgresDialect,
    statistics,
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    metadataVersion: () => listener.current(),
    prepare: (text) => prepared.mark(text),
    async *cursor(query, size) {
      const client = new driver.Client({ connectionString: url });
      // A server gone mid-read fails the read, never the process.
      client.on('error', () => {});
      cursors.add(client);
      try {
        await client.connect();
        await client.query(inUtc);
        await client.query('begin read only');
        await client.query(`declare rh_rows no scroll cursor for ${query.sql}`, [...query.parameters]);
        for (;;) {
          const { rows } = await client.query<unknown[]>({ text: `fetch forward ${size} from rh_rows`, rowMode: 'array' });
          if (rows.length > 0) yield rows;
          if (rows.length < size) return;
        }
      } finally {
        cursors.delete(client);
        // The transaction ends with the connection.
        await client.end().catch(() => {});
      }
    },
    close: async () => {
      await statistics.close();
      await listener.close();
      await Promise.all([...cursors].map((c) => c.end().catch(() => {})));
      await db.destroy();
    },
  };
}

/**
 * Only the driver the URL names is loaded: a SQLite service never pays for pg's start and memory,
 * nor a PostgreSQL one for better-sqlite3's.
 */
export async function openDatabase(databaseUrl: string, options: DatabaseOptions = {}): Promise<Database> {
  if (databaseUrl.startsWith('sqlite:')) {
    const { default: SqliteDatabase } = await import('better-sqlite3');
    return openSqlite(SqliteDatabase, databaseUrl.slice('sqlite:'.length));
  }
  return openPostgres(await loadPg(), databaseUrl, options);
}
