import fs from 'node:fs';
import path from 'node:path';
import type SqliteDatabase from 'better-sqlite3';
import { type CompiledQuery, Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import type pg from 'pg';
import { type Dialect, postgresDialect, sqliteDialect } from './dialect.ts';

/**
 * The query builder over whichever database DATABASE_URL names. Table and column names are
 * dynamic (user tables are created at run time), so the schema type is open.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Db = Kysely<any>;

export interface Database {
  db: Db;
  dialect: Dialect;
  /** Cheap round trip used by /readyz. */
  ping(): Promise<void>;
  close(): Promise<void>;
  /**
   * SQLite only: a query's rows as arrays, read lazily on a connection of its own, so a long read
   * (an export) holds no lock the other requests wait for and sees one snapshot throughout.
   * Close the iterator (return()) when done early.
   */
  iterate?(query: { sql: string; parameters: readonly unknown[] }): IterableIterator<unknown[]>;
  /** SQLite only: a number that moves whenever any connection but the read one commits (see ReadCache). */
  commitCounter?(): number;
}

/**
 * SQLite: a synchronous read on the read-only connection, for a query outside any transaction
 * (a Kysely transaction is another object, so it is never found here and reads its own work).
 */
const directReaders = new WeakMap<Db, (sql: string, parameters: readonly unknown[]) => Record<string, unknown>[]>();

/** PostgreSQL gave up on a transaction because of other writers (deadlock, serialization failure). */
const RETRYABLE = new Set(['40P01', '40001']);
const MAX_ATTEMPTS = 5;

/**
 * Every write runs here: one transaction. Concurrent requests may take row locks in opposite
 * orders; PostgreSQL then aborts one of them, which is run again from the start. (SQLite runs
 * one transaction at a time, so it never needs to.)
 */
export async function inTransaction<T>(database: Database, work: (tx: Db) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await database.db.transaction().execute(work);
    } catch (err) {
      const code = typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : '';
      if (attempt >= MAX_ATTEMPTS || !RETRYABLE.has(code)) throw err;
      // A moment's random wait, so the two that collided do not collide again at once.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * attempt));
    }
  }
}

/** Runs a compiled SELECT, on SQLite's read connection when outside a transaction. */
export async function readRows(db: Db, query: { sql: string; parameters: readonly unknown[] }): Promise<Record<string, unknown>[]> {
  const direct = directReaders.get(db);
  if (direct) return direct(query.sql, query.parameters);
  return (await db.executeQuery(query as CompiledQuery<Record<string, unknown>>)).rows;
}

/** better-sqlite3 compiles a statement on every prepare(); Kysely prepares per query, so keep them. */
function withStatementCache(raw: SqliteDatabase.Database, size = 1000) {
  const cache = new Map<string, SqliteDatabase.Statement>();
  return {
    close: () => raw.close(),
    prepare(source: string) {
      let stmt = cache.get(source);
      if (stmt) {
        // Refresh its place so the least recently used statement is the one dropped.
        cache.delete(source);
      } else {
        stmt = raw.prepare(source);
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

function openSqlite(Sqlite: typeof SqliteDatabase, file: string): Database {
  if (file !== ':memory:') fs.mkdirSync(path.dirname(file), { recursive: true });
  const raw = new Sqlite(file);
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = NORMAL');
  raw.pragma('foreign_keys = ON');
  sameSemantics(raw);
  // Planner statistics: without them SQLite can pick a poor index for a sorted filter.
  raw.pragma('optimize = 0x10002');
  const optimizer = setInterval(() => raw.pragma('optimize'), 60 * 60 * 1000);
  optimizer.unref();
  const db: Db = new Kysely({ dialect: new SqliteDialect({ database: withStatementCache(raw) }) });
  // Reads outside transactions go to a read-only connection of their own (WAL lets it read while
  // the main connection writes): they neither wait behind a write transaction nor see its work.
  // A second connection to :memory: would be another database, so that one reads in line.
  let reader: SqliteDatabase.Database | undefined;
  const exporters = new Set<SqliteDatabase.Database>();
  let dataVersion: SqliteDatabase.Statement | undefined;
  const readConnection = () => {
    if (!reader) {
      reader = new Sqlite(file, { readonly: true });
      sameSemantics(reader);
    }
    return reader;
  };
  if (file !== ':memory:') {
    let statements: ReturnType<typeof withStatementCache> | undefined;
    directReaders.set(db, (source, parameters) => {
      statements ??= withStatementCache(readConnection());
      return statements.prepare(source).all(...parameters) as Record<string, unknown>[];
    });
  }
  return {
    db,
    dialect: sqliteDialect,
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    ...(file === ':memory:'
      ? {}
      : {
          commitCounter: () => {
            dataVersion ??= readConnection().prepare('pragma data_version').pluck();
            return dataVersion.get() as number;
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
      clearInterval(optimizer);
      for (const conn of exporters) {
        try {
          conn.close();
        } catch {
          // An export still reading: its statement ends with the process.
        }
      }
      reader?.close();
      try {
        raw.pragma('optimize');
      } catch {
        // Optimizing on close is a courtesy; a closing database must still close.
      }
      await db.destroy();
    },
  };
}

let pgDriver: Promise<typeof pg> | undefined;

/** pg, loaded on first use, with its type parsers (global to the module) set once. */
function loadPg(): Promise<typeof pg> {
  pgDriver ??= import('pg').then(({ default: driver }) => {
    const { types } = driver;
    // Dates, times and timestamps come back as the strings the API speaks, never as local-time Date objects.
    const parseTimestamptz = types.getTypeParser(types.builtins.TIMESTAMPTZ);
    types.setTypeParser(types.builtins.TIMESTAMPTZ, (v: string) => (parseTimestamptz(v) as Date).toISOString());
    types.setTypeParser(types.builtins.DATE, (v: string) => v);
    types.setTypeParser(types.builtins.TIME, (v: string) => v);
    types.setTypeParser(types.builtins.INT8, (v: string) => Number(v));
    return driver;
  });
  return pgDriver;
}

function openPostgres(driver: typeof pg, url: string): Database {
  const pool = new driver.Pool({ connectionString: url, max: 10 });
  // An idle client that errors (server restart) must not crash the process.
  pool.on('error', () => {});
  const db: Db = new Kysely({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    dialect: postgresDialect,
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    close: () => db.destroy(),
  };
}

/**
 * Only the driver the URL names is loaded: a SQLite service never pays for pg's start and memory,
 * nor a PostgreSQL one for better-sqlite3's.
 */
export async function openDatabase(databaseUrl: string): Promise<Database> {
  if (databaseUrl.startsWith('sqlite:')) {
    const { default: SqliteDatabase } = await import('better-sqlite3');
    return openSqlite(SqliteDatabase, databaseUrl.slice('sqlite:'.length));
  }
  return openPostgres(await loadPg(), databaseUrl);
}
