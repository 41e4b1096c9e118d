import { createRequire } from 'node:module';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { type QueryExecutorProvider, sql } from 'kysely';

/**
 * Planner statistics that follow the user tables as they grow or shrink through the API.
 *
 * Which index serves a sorted, filtered page is the planner's choice, and it chooses from its
 * statistics: on SQLite, a table loaded through the API without them (or with the approximate ones
 * `PRAGMA optimize` takes) has its status index searched and 64,000 rows sorted per page instead of
 * its amount index walked. So every table is analysed exactly, in full, whenever as many of its
 * rows have been written since its last analysis as it had then; and on start, any
 * table whose statistics count a very different number of rows than it holds. That bounds the work
 * to about one full read of the table per doubling.
 */
export interface PlannerStatistics {
  /** `rows` rows of the user table `physical` were inserted, updated or deleted. */
  noteWrites(physical: string, rows: number): void;
  /** Resolves once no refresh is pending or running (tests and benchmarks wait for it). */
  settled(): Promise<void>;
  close(): Promise<void>;
}

/** Tables this small are planned well enough without statistics; changes below this never trigger work. */
const MIN_CHANGE = 500;

/** Analyses the given tables (null: every user table, only those found stale); answers their row counts. */
type Refresh = (tables: string[] | null) => Promise<Map<string, number>>;

/** When to refresh: the same on both databases. */
class Keeper implements PlannerStatistics {
  /** Per table: its rows at the last refresh, and the rows written since. */
  private readonly tables = new Map<string, { rows: number; written: number }>();
  private readonly pending = new Set<string>();
  private running: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly refresh: Refresh,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Checks every table once, in the background. */
  checkAll(): void {
    this.start(null);
  }

  noteWrites(physical: string, rows: number): void {
    const t = this.tables.get(physical) ?? { rows: 0, written: 0 };
    t.written += rows;
    this.tables.set(physical, t);
    // At least as many rows as the table had: about one full read of the table per doubling (at
    // half, bulk loads on SQLite ran 10 to 20% slower, waiting on the analyses' write lock).
    if (t.written >= Math.max(MIN_CHANGE, t.rows)) {
      t.written = 0;
      this.pending.add(physical);
      if (!this.running) this.start([]);
    }
  }

  private start(first: string[] | null): void {
    if (this.closed) return;
    this.running = (async () => {
      let batch: string[] | null = first;
      while (batch === null || batch.length > 0 || this.pending.size > 0) {
        if (batch !== null) {
          batch.push(...this.pending);
          this.pending.clear();
        }
        try {
          for (const [table, rows] of await this.refresh(batch)) {
            const t = this.tables.get(table) ?? { rows: 0, written: 0 };
            t.rows = rows;
            this.tables.set(table, t);
          }
        } catch (err) {
          // A table dropped meanwhile, a closing database: the next writes try again.
          if (!this.closed) this.onError(err);
        }
        batch = [];
        if (this.closed) break;
      }
    })().finally(() => {
      this.running = null;
    });
  }

  async settled(): Promise<void> {
    while (this.running) await this.running;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.settled();
  }
}

/**
 * The worker thread's program, as plain CommonJS text (it must not depend on how this module was
 * compiled). It runs on a connection of its own, so that reading a whole table to analyse it blocks
 * neither the event loop nor the read connection. Each index is analysed in its own statement
 * (ANALYZE holds the write lock while it reads), so a write waits at most for one index.
 * Asked for named tables, it analyses all their indexes; asked for all (null, on start), only the
 * indexes whose statistics are missing or count less than half or more than twice the rows.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Sqlite = require(workerData.driver);
const db = new Sqlite(workerData.file);
db.pragma('busy_timeout = 5000');
db.pragma('analysis_limit = 0'); // exact: every entry of every index
const quote = (name) => '"' + name.replace(/"/g, '""') + '"';
const userTables = db.prepare("select name from sqlite_schema where type = 'table' and name like 'rows!_%' escape '!'").pluck();
const indexesOf = db.prepare("select name from sqlite_schema where type = 'index' and tbl_name = ?").pluck();
parentPort.on('message', ({ tables }) => {
  const counts = [];
  let analysed = 0;
  try {
    for (const table of tables ?? userTables.all()) {
      const indexes = indexesOf.all(table);
      if (indexes.length === 0) continue; // dropped meanwhile
      const rows = db.prepare('select count(*) from ' + quote(table)).pluck().get();
      counts.push([table, rows]);
      const analysedBefore = db.prepare("select 1 from sqlite_schema where name = 'sqlite_stat1'").get() !== undefined;
      const stats = analysedBefore ? db.prepare('select idx, stat from sqlite_stat1 where tbl = ?').all(table) : [];
      const known = new Map(stats.map((r) => [r.idx, parseInt(r.stat, 10)]));
      for (const index of indexes) {
        const n = known.get(index);
        const stale = tables !== null || (n === undefined ? rows > 0 : rows > 2 * n || rows < n / 2);
        if (!stale) continue;
        try {
          db.exec('analyze ' + quote(index));
          analysed++;
        } catch {
          // dropped meanwhile
        }
      }
    }
    parentPort.postMessage({ counts, analysed });
  } catch (err) {
    parentPort.postMessage({ counts, analysed, error: String(err) });
  }
});
`;

/**
 * Where better-sqlite3 is, for the worker to load (its own `require` would look from the working
 * directory). Found from the script Node runs (the launcher, a test, a benchmark), then from the
 * working directory: this module cannot name its own place both as the CommonJS build and as the
 * ES module sources.
 */
export function driverPath(): string {
  for (const base of [process.argv[1], path.join(process.cwd(), 'index.js')]) {
    if (!base) continue;
    try {
      return createRequire(path.resolve(base)).resolve('better-sqlite3');
    } catch {
      // Not from there.
    }
  }
  throw new Error('better-sqlite3 cannot be found for the statistics worker');
}

/** How long the worker stays after its last job: it costs memory, and tables grow in bursts. */
const WORKER_IDLE_MS = 5_000;

/**
 * SQLite's statistics, taken in a worker thread. `reload` makes the service's own connections
 * load the new statistics (SQLite reads them only when a connection loads the schema).
 */
export function sqliteStatistics(
  file: string,
  hasUserTables: () => boolean,
  reload: () => Promise<void>,
  onError: (err: unknown) => void,
): PlannerStatistics {
  let driver: string | undefined;
  let worker: Worker | null = null;
  let idle: NodeJS.Timeout | undefined;

  const refresh: Refresh = async (tables) => {
    clearTimeout(idle);
    driver ??= driverPath();
    worker ??= new Worker(WORKER_SOURCE, { eval: true, workerData: { file, driver } });
    const w = worker;
    const answer = await new Promise<{ counts: [string, number][]; analysed: number; error?: string }>((resolve, reject) => {
      const onExit = () => reject(new Error('the statistics worker stopped'));
      w.once('exit', onExit);
      w.once('message', (m) => {
        w.off('exit', onExit);
        resolve(m);
      });
      w.postMessage({ tables });
    });
    idle = setTimeout(() => {
      void w.terminate();
      if (worker === w) worker = null;
    }, WORKER_IDLE_MS);
    idle.unref();
    if (answer.analysed > 0) await reload();
    if (answer.error) throw new Error(answer.error);
    return new Map(answer.counts);
  };

  const keeper = new Keeper(refresh, onError);
  if (hasUserTables()) keeper.checkAll();
  return {
    noteWrites: (physical, rows) => keeper.noteWrites(physical, rows),
    settled: () => keeper.settled(),
    async close() {
      const w = worker;
      worker = null;
      clearTimeout(idle);
      // A refresh in flight is cut short: its transaction rolls back, the statistics stay as they were.
      await w?.terminate();
      await keeper.close();
    },
  };
}

/**
 * PostgreSQL's statistics: autovacuum analyses a table only after a delay, so a table just loaded
 * is analysed at once. ANALYZE samples a bounded number of rows and takes no lock that reads or
 * writes wait for. PostgreSQL keeps its statistics across restarts, so there is nothing to check on start.
 */
export function postgresStatistics(db: QueryExecutorProvider, onError: (err: unknown) => void): PlannerStatistics {
  const keeper = new Keeper(async (tables) => {
    const counts = new Map<string, number>();
    for (const table of tables ?? []) {
      try {
        await sql`analyze ${sql.table(table)}`.execute(db);
      } catch (err) {
        if ((err as { code?: string }).code !== '42P01') throw err; // dropped meanwhile: nothing to do
        continue;
      }
      const row = await sql<{ rows: number }>`select reltuples::float8 as rows from pg_class where oid = ${table}::regclass`.execute(db);
      counts.set(table, Math.max(0, Number(row.rows[0]?.rows ?? 0)));
    }
    return counts;
  }, onError);
  return { noteWrites: (p, n) => keeper.noteWrites(p, n), settled: () => keeper.settled(), close: () => keeper.close() };
}
