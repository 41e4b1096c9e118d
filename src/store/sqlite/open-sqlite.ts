import fs from 'node:fs';
import path from 'node:path';
import type SqliteDatabase from 'better-sqlite3';
import { Kysely, sql } from 'kysely';
import { readDirectly } from '../read-rows.ts';
import { warnBackground } from '../warn-background.ts';
import type { Database, Db } from '../dialect.ts';
import type { PlannerStatistics } from '../statistics.ts';
import { sqliteChangeNumbering } from './change-numbering.ts';
import { backgroundCheckpoints } from './checkpoints.ts';
import { ImmediateSqliteDialect, MainConnectionGate, mainConnection } from './connection.ts';
import { sqliteDialect } from './dialect.ts';
import { driverPath } from './driver-path.ts';
import { sqliteIdempotencySweep } from './idempotency-sweep.ts';
import { type Run, type WriteNow, groupCommits } from './group-commit.ts';
import { importSettings } from './import-settings.ts';
import { MetadataVersion } from './metadata-version.ts';
import { SqliteReads } from './reads.ts';
import { runEach } from './run-each.ts';
import { withStatementCache } from './statement-cache.ts';
import { sqliteStatistics } from './statistics.ts';

/** SQLite's Database, with what only SQLite has: statements run at once on the main connection. */
export interface SqliteAdapter extends Database {
  /**
   * Runs one statement at once on the main connection (where the open transaction is), and
   * answers the rows it returns: for statements every write makes, without the query builder's
   * round of promises.
   */
  runNow: Run;
  /** Runs `work` at once on the main connection, committed with the writes of the same turn (group-commit.ts). */
  writeNow: WriteNow;
}

/** An in-memory database cannot be read by a second connection: its (small, short-lived) tables go without. */
const inlineStatistics: PlannerStatistics = { noteWrites: () => {}, settled: async () => {}, close: async () => {} };

/**
 * Never `PRAGMA optimize`: it analyses a sample, and a sample of an index sorted by status sees
 * one status. Statistics are exact, taken as tables grow (statistics.ts).
 */
function fileStatistics(raw: SqliteDatabase.Database, file: string, db: Db, reads: SqliteReads, version: MetadataVersion): PlannerStatistics {
  return sqliteStatistics(
    file,
    () => raw.prepare("select 1 from sqlite_schema where type = 'table' and name like 'rows!_%' escape '!'").get() !== undefined,
    async () => {
      // A connection loads statistics with the schema: the read connection is opened anew, the main one told.
      reads.reopen();
      version.readerReopened();
      await sql`analyze sqlite_schema`.execute(db);
    },
    warnBackground('planner statistics'),
  );
}

export function openSqlite(Sqlite: typeof SqliteDatabase, file: string): SqliteAdapter {
  const inMemory = file === ':memory:';
  if (!inMemory) fs.mkdirSync(path.dirname(file), { recursive: true });
  const raw = mainConnection(Sqlite, file);
  // Checkpoints are the worker's (checkpoints.ts); this connection makes one only when the
  // log has grown to 10,000 pages (40 MiB) regardless, as a backstop.
  const checkpoints = inMemory ? undefined : backgroundCheckpoints(file, driverPath, warnBackground('checkpoint'));
  if (checkpoints) raw.pragma('wal_autocheckpoint = 10000');
  // Reads outside transactions go to a read-only connection of their own (reads.ts). A second
  // connection to :memory: would be another database, so that one reads in line.
  const reads = inMemory ? undefined : new SqliteReads(Sqlite, file);
  const version = reads && new MetadataVersion(raw, reads);
  const forgetVersion = version ? version.forget : () => {};
  // What may change the metadata: a statement naming a metadata table (the query builder quotes
  // every name), or the end of a transaction that held one (inside it, the counter is read on the
  // reader, which sees it as it was). Row writes leave the counter be, and so does the end of a
  // transaction of row writes alone (a group commit's): the counter is not read again after it.
  // Any statement but a read may write, and so call for a checkpoint. Worked out once per statement text.
  let metadataStatementRan = false;
  const main = withStatementCache(raw, (source) => {
    const metadata = source.includes('"rh_');
    const ends = /^(commit|rollback)\b/i.test(source);
    // A savepoint's `rollback to` ends no transaction: the one around it may still hold a metadata statement.
    const endsTransaction = /^(commit|rollback)\s*$/i.test(source);
    const writes = checkpoints !== undefined && !source.startsWith('select');
    if (!metadata && !ends && !writes) return undefined;
    return () => {
      if (metadata) {
        metadataStatementRan = true;
        forgetVersion();
      } else if (ends && metadataStatementRan) {
        if (endsTransaction) metadataStatementRan = false;
        forgetVersion();
      }
      if (writes) checkpoints?.wrote();
    };
  });
  const gate = new MainConnectionGate();
  const db: Db = new Kysely({ dialect: new ImmediateSqliteDialect({ database: main }, gate) });
  if (reads) readDirectly(db, reads.read);
  const statistics = reads && version ? fileStatistics(raw, file, db, reads, version) : inlineStatistics;
  const runNow: Run = (source, parameters) => {
    const statement = main.prepare(source);
    return statement.reader ? (statement.all(...parameters) as Record<string, unknown>[]) : (statement.run(...parameters), []);
  };
  // The group's transaction at once when the query builder leaves the connection free, else through it.
  const writeNow = groupCommits(raw, runNow, (commit) => (raw.inTransaction ? undefined : gate.runIfFree(commit)) ?? db.connection().execute(commit));
  return {
    db,
    dialect: sqliteDialect,
    statistics,
    changeNumbering: sqliteChangeNumbering(runNow, writeNow),
    // One instance per database file: no other to tell or to hear.
    changeSignals: { announce: () => {}, listen: () => () => {}, live: () => true },
    runNow,
    writeNow,
    insertEach: (source, rows) => runEach(main, source, rows),
    tuneForImport: () => importSettings(runNow),
    // Statements are compiled once per connection by the statement cache already.
    prepare: () => {},
    sweepExpiredAnswers: sqliteIdempotencySweep(db),
    // Unknowable for :memory: (no second connection to read the counter on): no cache is trusted.
    metadataVersion: version ? () => version.current() : () => undefined,
    // :memory: cannot be read on a connection of its own: keyset pages.
    scan: reads ? (scan) => reads.scan(scan) : (scan) => scan.pages(),
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    close: async () => {
      await statistics.close();
      await checkpoints?.close();
      reads?.close();
      await db.destroy();
    },
  };
}
