import { Worker } from 'node:worker_threads';
import { Keeper, type PlannerStatistics, type Refresh } from '../statistics.ts';
import { driverPath } from './driver-path.ts';

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
