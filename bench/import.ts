// Import benchmark: N rows of the shared dataset (default 1,000,000) as one CSV file, POSTed to
// rows-import of `rowhouse serve` (the build: run `npm run build` first) through Node's http
// client, streamed from a generator (the file is never whole in memory, in the client or, the
// route promises, in the service), in one transaction (atomic=true, the default). Reports rows/s
// against the floor and the service's peak RSS growth during the import. Goals: at least 0.7 of
// the floor's rate, and less than 64 MiB of growth.
//
// The floor is /import of bench/floor-server.ts (floor-server-pg.ts on PostgreSQL): a separate
// process that receives the same bytes the same way (the same generator, the same http client,
// over loopback), parses them with csv-parse as the service does, and inserts every row in ONE
// transaction, through one prepared statement on SQLite and 1000-row multi-row inserts on
// PostgreSQL (the service writes each 1000-row chunk as one statement), into a table made by the
// same API (createBenchTable), so with the same indexes. That is the service's work minus its
// checks and its row building. An in-process floor (better-sqlite3 in this script) would have been
// simpler, but would skip the HTTP transfer and the body parsing the service cannot skip, and
// would share this process with the CSV generator: the ratio would charge the service for
// receiving bytes. Both sides write into fresh tables of the same database, one after the other,
// alternating which goes first; before each import both processes are left to go idle (the
// planner statistics the service takes after a large write, and the checkpoint that copies its
// write-ahead log back after the commit, run in worker threads: they finish first, so neither
// side's import shares the machine, or the database file, with the other's leftover work).
//
// The file: a header `id,title,status,…` (the id and the dataset's fields, as an export writes
// them minus its system columns), CRLF newlines, RFC 4180 quoting (the dataset's words hold
// commas, quotes and newlines), record and list cells as JSON, null as an empty cell. A million
// rows are about 230 MB: over the default ROWHOUSE_MAX_FILE_BYTES (100 MiB), so the service runs
// with a higher limit.
//
// Memory: the service's VmRSS sampled every 50 ms during each import, and its VmHWM (reset before
// each import through /proc/<pid>/clear_refs, so it is the peak of that import alone; where the
// kernel refuses, the samples only), over its VmRSS just before the import (after warm-up and idle).
//
// On a 2-core machine this script's CSV generation (reported alone) competes with the service, the
// floor and PostgreSQL for the cores, alike for both sides; the rounds' spread is printed, and the
// CPU time each side spent per row (less sensitive to other load on the machine than rows/s).
// The service runs as configured by default, so with its change log (every imported row is also
// a change entry); ROWHOUSE_CHANGE_LOG=off in the environment measures it without.
//   npm run build && node --import tsx bench/import.ts [rows=1000000] [rounds=3]      (BENCH_DATABASE=postgres too)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { csvOfDataset } from './support/csv.ts';
import { median } from './support/rounds.ts';
import { api, type BenchTable, createBenchTable, dataset } from './support/dataset.ts';
import { BENCH_KEY, type Proc, cpuMs, memory, sampled, startFloor, startService } from './support/processes.ts';
// @ts-expect-error: a plain JavaScript module of the test setup, without type declarations
import { startPostgres } from '../test/support/postgres-server.mjs';

const N = Number(process.argv[2] ?? 1_000_000);
const ROUNDS = Number(process.argv[3] ?? 3);
if (!(Number.isInteger(N) && N >= 1) || !(Number.isInteger(ROUNDS) && ROUNDS >= 1)) throw new Error('usage: bench/import.ts [rows=1000000] [rounds=3]');
const WARMUP = Math.min(N, 20_000);
const RATIO_GOAL = 0.7;
const RSS_BUDGET_MIB = 64;
const SAMPLE_MS = 50;

const ds = await dataset();
const CODES = ds.FIELDS.map((f) => f.code);
const { csvFile, postCsv } = csvOfDataset(ds);

/** Resets a process's VmHWM to its VmRSS (Linux 4.0+); false where the kernel does not let us. */
function resetPeak(pid: number): boolean {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** User + system CPU time of a process so far, all threads, in ms (clock ticks of 10 ms). */
/** Threads of a process. */
const threads = (pid: number) => Number(/Threads:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);

/**
 * Waits until a process has used at most 20 ms of CPU in each of two consecutive 500 ms windows,
 * and has at most `maxThreads` threads (the service's statistics worker, which analyses a table
 * after a large write, leaves 5 s after its last job), up to 2 minutes.
 */
async function idle(pid: number, maxThreads = Infinity): Promise<void> {
  const deadline = Date.now() + 120_000;
  let quiet = 0;
  let last = cpuMs(pid).total;
  while ((quiet < 2 || threads(pid) > maxThreads) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 500));
    const now = cpuMs(pid).total;
    quiet = now - last <= 20 ? quiet + 1 : 0;
    last = now;
  }
}

interface Run {
  seconds: number;
  rowsPerSecond: number;
  cpuMs: number;
  /** CPU the process spent after answering, until idle again (the service: its checkpoint and planner statistics, in worker threads). */
  afterCpuMs: number;
  benchCpuMs: number;
  /** Over the VmRSS just before the import: the peak of the samples, and of VmHWM. */
  sampledGrowth: number;
  hwmGrowth: number;
  before: number;
  samples: number;
  maxGapMs: number;
}

/** One import of n rows into `url`, timed, with the CPU and memory of process `pid` while it runs. */
async function measure(pid: number, url: string, n: number, headers: Record<string, string>, maxThreads?: number): Promise<Run> {
  await idle(pid, maxThreads);
  const peakReset = resetPeak(pid);
  const before = memory(pid).rss;
  const cpu0 = cpuMs(pid).total;
  const bench0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const { result: answer, peak, samples, maxGapMs } = await sampled(pid, () => postCsv(url, n, headers), SAMPLE_MS, before);
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const bench = process.cpuUsage(bench0);
  const after = memory(pid);
  const cpu1 = cpuMs(pid).total;
  await idle(pid, maxThreads);
  const afterCpuMs = cpuMs(pid).total - cpu1;
  if (answer.created !== n || (answer.failed ?? 0) !== 0) throw new Error(`${url} answered ${JSON.stringify(answer).slice(0, 500)}, expected ${n} rows created`);
  return {
    seconds,
    rowsPerSecond: n / seconds,
    cpuMs: cpu1 - cpu0,
    afterCpuMs,
    benchCpuMs: (bench.user + bench.system) / 1000,
    sampledGrowth: peak - before,
    hwmGrowth: peakReset ? after.hwm - before : NaN,
    before,
    samples,
    maxGapMs,
  };
}

// The client's own cost: generating the file alone, and its size.
let bytes = 0;
const g0 = process.hrtime.bigint();
for (const chunk of csvFile(N)) bytes += chunk.length;
const generateSeconds = Number(process.hrtime.bigint() - g0) / 1e9;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-bench-import-'));
const postgres = process.env.BENCH_DATABASE === 'postgres' ? await startPostgres() : null;
if (process.env.BENCH_DATABASE === 'postgres' && !postgres) throw new Error('no PostgreSQL binaries found');
const dbFile = path.join(dir, 'rowhouse.db');
const service = await startService({
  ROWHOUSE_DATA_DIR: dir,
  ROWHOUSE_MAX_FILE_BYTES: String(Math.max(100 * 2 ** 20, 2 * bytes)),
  ...(postgres ? { DATABASE_URL: postgres.url } : {}),
});
const servicePid = service.child.pid as number;
const serviceThreads = threads(servicePid);

// Fresh tables for every import: the warm-up's and each round's, the service's (s…) and the floor's (f…).
const names = ['w', ...Array.from({ length: ROUNDS }, (_, k) => `r${k + 1}`)];
const serviceTables = new Map<string, BenchTable>();
const floorTables: BenchTable[] = [];
for (const name of names) {
  serviceTables.set(name, await createBenchTable(service.url, `s${name}`));
  floorTables.push(await createBenchTable(service.url, `f${name}`));
}
const columnsOf = (t: BenchTable) => Object.fromEntries(ds.FIELDS.map((f) => [f.code, t.column(f.code)]));
const floor: Proc = await startFloor(postgres ? postgres.url : dbFile, floorTables.map((t) => ({ physical: t.physical, columns: columnsOf(t) })));
const floorPid = floor.child.pid as number;

/** Both processes idle: the one about to be measured is waited for again by measure(). */
const bothIdle = async () => {
  await idle(servicePid, serviceThreads);
  await idle(floorPid);
};
const serviceImport = async (name: string, n: number) => {
  await bothIdle();
  return measure(servicePid, `${service.url}/api/tables/s${name}/rows-import?format=csv&encoding=utf8`, n, { 'x-api-key': BENCH_KEY }, serviceThreads);
};
const floorImport = async (name: string, n: number) => {
  await bothIdle();
  return measure(floorPid, `${floor.url}/import?table=${names.indexOf(name)}`, n, {});
};

/** Rows in a table, and the sum of a number column over them, straight from the database. */
async function tally(table: BenchTable): Promise<{ rows: number; sum: number }> {
  const text = `select count(*) as rows, sum(${table.column('quantity')}) as sum from ${table.physical}`;
  if (postgres) {
    const client = new pg.Client({ connectionString: postgres.url });
    await client.connect();
    try {
      const { rows: [r] } = await client.query(text);
      return { rows: Number(r.rows), sum: Number(r.sum) };
    } finally {
      await client.end();
    }
  }
  const db = new SqliteDatabase(dbFile, { readonly: true });
  try {
    const r = db.prepare(text).get() as { rows: number; sum: number };
    return { rows: Number(r.rows), sum: Number(r.sum) };
  } finally {
    db.close();
  }
}

const runs = { service: [] as Run[], floor: [] as Run[] };
let expectedSum = 0;
for (const r of ds.rows(N)) expectedSum += r.values.quantity as number;
const checks: string[] = [];
try {
  await serviceImport('w', WARMUP);
  await floorImport('w', WARMUP);
  for (let round = 1; round <= ROUNDS; round++) {
    const name = `r${round}`;
    // Alternating which side goes first: a round's second import runs on a database that just took a million rows.
    if (round % 2 === 1) {
      runs.service.push(await serviceImport(name, N));
      runs.floor.push(await floorImport(name, N));
    } else {
      runs.floor.push(await floorImport(name, N));
      runs.service.push(await serviceImport(name, N));
    }
    console.log(`round ${round}: service ${runs.service.at(-1)?.rowsPerSecond.toFixed(0)} rows/s, floor ${runs.floor.at(-1)?.rowsPerSecond.toFixed(0)} rows/s`);
    for (const [side, table] of [['service', serviceTables.get(name)], ['floor', floorTables[names.indexOf(name)]]] as const) {
      const t = await tally(table as BenchTable);
      if (t.rows !== N || Math.abs(t.sum - expectedSum) > 1e-6) throw new Error(`${side} round ${round}: ${t.rows} rows (sum of quantity ${t.sum}), expected ${N} (${expectedSum})`);
    }
  }
  checks.push(`every round: ${N} rows in each side's table, the sum of quantity as the dataset's`);
  // A few rows read back through the API, as the dataset wrote them (quoting, JSON cells, nulls).
  const last = serviceTables.get(`r${ROUNDS}`) as BenchTable;
  const probe = [0, 1, Math.floor(N / 2), N - 1].filter((i, k, a) => a.indexOf(i) === k);
  const source = new Map<number, { id: string; values: Record<string, unknown> }>();
  let i = 0;
  for (const r of ds.rows(N)) {
    if (probe.includes(i)) source.set(i, r);
    i++;
  }
  for (const k of probe) {
    const want = source.get(k) as { id: string; values: Record<string, unknown> };
    const row = await api(service.url, 'GET', `/api/tables/${last.id}/rows/${want.id}`);
    const got = JSON.stringify(CODES.map((c) => row.values[c] ?? null));
    const expected = JSON.stringify(CODES.map((c) => want.values[c] ?? null));
    if (got !== expected) throw new Error(`row ${want.id} reads ${got}, expected ${expected}`);
  }
  checks.push(`rows ${probe.join(', ')} read back through the API with the dataset's values`);
} finally {
  await service.stop();
  await floor.stop();
  await postgres?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}

const best = (xs: Run[]) => xs.reduce((a, b) => (b.rowsPerSecond > a.rowsPerSecond ? b : a));
const s = best(runs.service);
const f = best(runs.floor);
const ratios = runs.service.map((r, k) => r.rowsPerSecond / runs.floor[k].rowsPerSecond);
const ratio = s.rowsPerSecond / f.rowsPerSecond;
console.log(
  `\n${postgres ? 'PostgreSQL' : 'SQLite'}: ${N} rows imported as one ${(bytes / 1e6).toFixed(0)} MB CSV file in one transaction, ${ROUNDS === 1 ? '1 round' : `best of ${ROUNDS} rounds`} after a ${WARMUP}-row warm-up; ` +
    `service: node bin/rowhouse.mjs serve (the build in dist/); ${os.cpus().length} cores, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`,
);
console.log(`service: change log ${process.env.ROWHOUSE_CHANGE_LOG === 'off' ? 'off (ROWHOUSE_CHANGE_LOG=off)' : 'on (the default)'}`);
console.log(`client: generating the file alone takes ${generateSeconds.toFixed(1)} s (${(N / generateSeconds).toFixed(0)} rows/s) of this script's CPU\n`);
console.log(`${'side'.padEnd(38)} ${'seconds'.padStart(8)} ${'rows/s'.padStart(8)} ${'CPU s'.padStart(6)} ${'bench CPU s'.padStart(12)} ${'RSS before'.padStart(11)} ${'growth: sampled'.padStart(16)} ${'VmHWM'.padStart(6)}`);
const line = (name: string, r: Run) =>
  console.log(
    `${name.padEnd(38)} ${r.seconds.toFixed(1).padStart(8)} ${r.rowsPerSecond.toFixed(0).padStart(8)} ${(r.cpuMs / 1000).toFixed(1).padStart(6)} ${(r.benchCpuMs / 1000).toFixed(1).padStart(12)} ${r.before.toFixed(0).padStart(8)} MiB ${r.sampledGrowth.toFixed(1).padStart(12)} MiB ${Number.isNaN(r.hwmGrowth) ? '   n/a' : r.hwmGrowth.toFixed(1).padStart(6)}`,
  );
line('service: POST rows-import (fastest)', s);
line(`floor: csv-parse + raw inserts (fastest)`, f);
if (ROUNDS > 1) {
  const all = (xs: Run[]) => xs.map((r) => r.rowsPerSecond.toFixed(0)).join(' ');
  console.log(`\nrows/s of every round: service ${all(runs.service)}; floor ${all(runs.floor)}; service/floor per round ${ratios.map((x) => x.toFixed(2)).join(' ')} (median ${median(ratios).toFixed(2)})`);
  // A round that follows a long idle (the floor's import) starts from a heap V8 has shrunk meanwhile: its growth is the larger.
  const peakOf = (r: Run) => r.before + Math.max(r.sampledGrowth, r.hwmGrowth || 0);
  console.log(`service RSS growth of every round (max of sampled and VmHWM): ${runs.service.map((r) => `${(peakOf(r) - r.before).toFixed(1)} (${r.before.toFixed(0)} → ${peakOf(r).toFixed(0)})`).join(', ')} MiB`);
}
const cpuPerRow = (xs: Run[]) => median(xs.map((r) => (r.cpuMs * 1000) / N));
console.log(`CPU per row (median of the rounds, all threads): service ${cpuPerRow(runs.service).toFixed(1)} µs, floor ${cpuPerRow(runs.floor).toFixed(1)} µs (floor/service ${(cpuPerRow(runs.floor) / cpuPerRow(runs.service)).toFixed(2)})${postgres ? '; PostgreSQL\'s own CPU not counted' : ''}`);
const afterPerRow = (xs: Run[]) => median(xs.map((r) => (r.afterCpuMs * 1000) / N));
console.log(`CPU per row after the answer, until idle (not in the figures above): service ${afterPerRow(runs.service).toFixed(1)} µs (its checkpoint and planner statistics, in worker threads), floor ${afterPerRow(runs.floor).toFixed(1)} µs`);
const samples = runs.service.reduce((a, r) => a + r.samples, 0);
const maxGap = Math.max(...runs.service.map((r) => r.maxGapMs));
console.log(`${samples} memory samples of the service, longest gap ${maxGap.toFixed(0)} ms; VmHWM ${Number.isNaN(s.hwmGrowth) ? 'could not be reset (samples only)' : 'reset before each import'}`);
for (const c of checks) console.log(`checked: ${c}`);

const growth = Math.max(...runs.service.map((r) => Math.max(r.sampledGrowth, Number.isNaN(r.hwmGrowth) ? 0 : r.hwmGrowth)));
const budgets: [string, boolean][] = [
  [`import at least ${RATIO_GOAL * 100}% of the floor's rows/s (best against best: ${(ratio * 100).toFixed(0)}%)`, ratio >= RATIO_GOAL],
  [`service peak RSS growth during an import under ${RSS_BUDGET_MIB} MiB (largest of the rounds: ${growth.toFixed(1)} MiB)`, growth < RSS_BUDGET_MIB],
];
console.log('\nbudgets:');
for (const [what, ok] of budgets) console.log(`  ${ok ? 'PASS' : 'FAIL'}  ${what}`);
process.exit(budgets.every(([, ok]) => ok) ? 0 : 1);
