// Rows benchmark: the service against a minimal Fastify + raw SQL floor on the same 200,000-row
// table (so with the same indexes), in one run. The rows are loaded through the API (1,000-row bulk
// creates) and the service restarted, as a user's table would be. SQLite by default;
// BENCH_DATABASE=postgres runs both on a PostgreSQL server the benchmark starts (the machine's
// binaries, as the tests do). A create sends a whole dataset row with a client id, as users do.
// Issue 27's goals: reads at least 0.9 of the floor, writes 0.8, and a CSV export of the whole
// table at most 1.1x the floor's time.
//   node --import tsx bench/rows.ts [rows=200000] [seconds=5]     (BENCH_ONLY="get by id,create" runs only those workloads)
import fs from 'node:fs';
import { type Load, type LoadRequest, load } from './support/load.ts';
import { median, pairedRounds } from './support/rounds.ts';
import { createBenchTable, createBodies, dataset, loadThroughApi, pageAtRow, floorTable } from './support/dataset.ts';
import { BENCH_KEY, benchDatabase, cpuMs, type Proc, startFloor, startService } from './support/processes.ts';
import { scatteredRows } from './support/scattered.ts';

const N = Number(process.argv[2] ?? 200_000);
const SECONDS = Number(process.argv[3] ?? 5);
const DEEP = Math.floor(Math.min(150_000, N * 0.75) / 200) * 200;

const { dir, postgres, env, db } = await benchDatabase('bench');
const ds = await dataset();

let service = await startService(env);
const table = await createBenchTable(service.url);
const t0 = Date.now();
await loadThroughApi(service.url, 'bench', N);
console.log(`loaded ${N} rows into ${postgres ? 'PostgreSQL' : 'SQLite'} through the API in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
await service.stop();

service = await startService(env);
const floor = await startFloor(db, [floorTable(ds, table)]);

// The page starting at row DEEP, reached by walking nextUrl; the floor's starts after the row before it.
const { path: deepPath, last } = await pageAtRow(service.url, 'bench', DEEP);
const floorDeep = `/after?c=${encodeURIComponent(last.createdAt)}&id=${encodeURIComponent(last.id)}`;

const q = (o: unknown) => encodeURIComponent(JSON.stringify(o));
const paidPath =
  `/api/tables/bench/rows?filter=${q({ values: { status: { _eq: 'paid' }, amount: { _gt: 5000 } } })}` +
  `&sort=${q([{ amount: { direction: 'desc', nulls: 'nullsLast' } }, { id: { direction: 'desc', nulls: 'nullsLast' } }])}`;
const sortedBy = (code: string) =>
  `/api/tables/bench/rows?sort=${q([{ [code]: { direction: 'desc', nulls: 'nullsLast' } }, { id: { direction: 'desc', nulls: 'nullsLast' } }])}`;
const someRow = scatteredRows(N);
const someId = () => ds.rowId(someRow());
/**
 * A create is what users send: a whole row of the benchmark table with a client id, fresh each
 * time (createBodies). Both sides take their bodies from the one maker, so no id repeats across
 * the service and the floor. (It created {title, amount} until issue 27: most of the validation
 * and of the change entry went unmeasured, and the create ratio read 1.05 on SQLite where a
 * full-row harness found 0.62.)
 */
const createBody = createBodies(ds, N);
let patched = 0;
const patchBody = () => JSON.stringify({ values: { amount: (patched++ % 10000) + 0.25 } });
const auth = { 'x-api-key': BENCH_KEY };

const workloads: [string, LoadRequest, LoadRequest][] = [
  ['first page', { path: '/api/tables/bench/rows', headers: auth }, { path: '/first' }],
  ['paid, amount > 5000, amount desc', { path: paidPath, headers: auth }, { path: '/paid' }],
  [`page at row ${DEEP} by cursor`, { path: deepPath, headers: auth }, { path: floorDeep }],
  ['amount desc (indexed)', { path: sortedBy('amount'), headers: auth }, { path: '/byAmount' }],
  ['quantity desc (no index)', { path: sortedBy('quantity'), headers: auth }, { path: '/byQuantity' }],
  ['get by id', { path: () => `/api/tables/bench/rows/${someId()}`, headers: auth }, { path: () => `/rows/${someId()}` }],
  ['create', { method: 'POST', path: '/api/tables/bench/rows', body: createBody, headers: auth }, { method: 'POST', path: '/rows', body: createBody }],
  ['patch', { method: 'PATCH', path: () => `/api/tables/bench/rows/${someId()}`, body: patchBody, headers: auth }, { method: 'PATCH', path: () => `/rows/${someId()}`, body: patchBody }],
];

/**
 * Each workload in ROUNDS rounds, a round running the service and the floor for SECONDS each, back
 * to back, alternating which goes first. The figure is the median of the rounds' ratios, as the
 * issue's harness took the median of three runs: a burst of other load on this shared machine
 * falls in one round, on both sides of it. (Two runs of each side averaged gave get by id 0.71 to
 * 0.84 from run to run of one build.) The rates and latencies shown are the medians of each side.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const results: Record<string, { service: Load; floor: Load; ratio: number; ratios: number[]; cpu: { service: number; floor: number } }> = {};
/**
 * The server process's own CPU time per answered request (µs), beside the rates: unlike a rate,
 * other load on the machine barely moves it. (The database server's, on PostgreSQL, is not in it.)
 */
async function withCpu(proc: Proc, run: () => Promise<Load>): Promise<Load & { cpuUs: number }> {
  const pid = proc.child.pid as number;
  const before = cpuMs(pid).total;
  const result = await run();
  return { ...result, cpuUs: ((cpuMs(pid).total - before) * 1000) / (result.rps * SECONDS) };
}
/** The medians of runs, field by field; their failures added up. */
const medianOf = (runs: Load[]): Load => ({
  rps: median(runs.map((r) => r.rps)),
  mean: median(runs.map((r) => r.mean)),
  p50: median(runs.map((r) => r.p50)),
  p99: median(runs.map((r) => r.p99)),
  errors: runs.reduce((n, r) => n + r.errors, 0),
  non2xx: runs.reduce((n, r) => n + r.non2xx, 0),
});
// BENCH_ONLY=name,name runs only the workloads named (and the export), to look at one closely.
const only = process.env.BENCH_ONLY?.split(',');
for (const [name, s, f] of workloads.filter(([name]) => !only || only.includes(name))) {
  await load(service.url, s, 1); // warm-up
  await load(floor.url, f, 1);
  const runs = await pairedRounds(ROUNDS, ['service', 'floor'], (side) => (side === 'service' ? withCpu(service, () => load(service.url, s, SECONDS)) : withCpu(floor, () => load(floor.url, f, SECONDS))));
  const ratios = runs.service.map((r, k) => r.rps / runs.floor[k].rps);
  const serviceLoad = medianOf(runs.service);
  const cpu = { service: median(runs.service.map((r) => r.cpuUs)), floor: median(runs.floor.map((r) => r.cpuUs)) };
  results[name] = { service: serviceLoad, floor: medianOf(runs.floor), ratio: median(ratios), ratios, cpu };
  if (serviceLoad.non2xx > 0 || serviceLoad.errors > 0) console.log(`  ! ${name}: ${serviceLoad.non2xx} non-2xx, ${serviceLoad.errors} errors`);
}

/** Seconds to download a whole export once. */
async function exportSeconds(target: string, headers: Record<string, string>): Promise<number> {
  const started = process.hrtime.bigint();
  const res = await fetch(target, { headers });
  if (!res.ok || !res.body) throw new Error(`${target} → ${res.status}`);
  for await (const _chunk of res.body);
  return Number(process.hrtime.bigint() - started) / 1e9;
}
/**
 * The export, service against floor: EXPORT_ROUNDS rounds, each downloading from both back to
 * back, alternating which goes first. The figure is the median of the rounds' ratios (a burst of
 * other load on the machine falls in one round, on both sides); the times shown are medians.
 * (Three of the service's, then three of the floor's, moved the ratio from 1.15 to 1.28 between
 * two runs of one build.)
 */
const EXPORT_ROUNDS = 5;
/**
 * Each download's server CPU (ms) is kept beside its time: a round whose time is far above its CPU
 * waited (for the client, the machine's other load), one whose CPU is high worked more.
 */
const exportCpu: Record<'service' | 'floor', number[]> = { service: [], floor: [] };
const exportOnce = async (side: 'service' | 'floor') => {
  const pid = (side === 'service' ? service : floor).child.pid as number;
  const before = cpuMs(pid).total;
  const seconds = await (side === 'service' ? exportSeconds(`${service.url}/api/tables/bench/rows-export?format=csv&encoding=utf8&newline=lf`, auth) : exportSeconds(`${floor.url}/export`, {}));
  exportCpu[side].push(cpuMs(pid).total - before);
  return seconds;
};
await exportOnce('service'); // warm-up, both
await exportOnce('floor');
exportCpu.service.length = exportCpu.floor.length = 0;
const exportTimes = await pairedRounds(EXPORT_ROUNDS, ['service', 'floor'], exportOnce);
const exportRatios = exportTimes.service.map((t, k) => t / exportTimes.floor[k]);
const exportService = median(exportTimes.service);
const exportFloor = median(exportTimes.floor);
const exportRatio = median(exportRatios);

// The access log's cost (issue 17 item 7): the service above runs as users run it, at the default
// log level (info: one access-log line per request, on its stdout, which this process reads as a
// log collector would). A second one on the same database runs at ROWHOUSE_LOG_LEVEL=warn, which
// silences it. Two paired rounds, their rates averaged.
const quiet = await startService({ ...env, ROWHOUSE_LOG_LEVEL: 'warn' });
const logCost: Record<string, { quiet: number; logged: number }> = {};
// A read that renders 50 rows, the cheapest read, and a write.
for (const name of ['first page', 'get by id', 'patch']) {
  const [, request] = workloads.find(([n]) => n === name) as (typeof workloads)[number];
  await load(quiet.url, request, 1);
  const runs = await pairedRounds(2, ['quiet', 'logged'], (side) => load(side === 'quiet' ? quiet.url : service.url, request, SECONDS));
  const mean = (xs: Load[]) => xs.reduce((sum, r) => sum + r.rps, 0) / xs.length;
  logCost[name] = { quiet: mean(runs.quiet), logged: mean(runs.logged) };
}
await quiet.stop();

await service.stop();
await floor.stop();
await postgres?.stop();
fs.rmSync(dir, { recursive: true, force: true });

const fmt = (x: number, d = 0) => x.toFixed(d).padStart(8);
console.log(`\n${N} rows on ${postgres ? 'PostgreSQL' : 'SQLite'}, each workload in ${ROUNDS} rounds of ${SECONDS} s on each side, back to back; the ratio is the median of the rounds'; 10 connections; latency in ms\n`);
console.log(`${'workload'.padEnd(36)} ${'svc req/s'.padStart(9)} ${'p50'.padStart(8)} ${'p99'.padStart(8)} ${'floor r/s'.padStart(9)} ${'p50'.padStart(8)} ${'p99'.padStart(8)} ${'ratio'.padStart(8)}   CPU µs/request, service : floor`);
for (const [name, { service: s, floor: f, ratio, ratios, cpu }] of Object.entries(results)) {
  console.log(`${name.padEnd(36)} ${fmt(s.rps).padStart(9)} ${fmt(s.p50, 1)} ${fmt(s.p99, 1)} ${fmt(f.rps).padStart(9)} ${fmt(f.p50, 1)} ${fmt(f.p99, 1)} ${fmt(ratio, 2)}   ${cpu.service.toFixed(0)} : ${cpu.floor.toFixed(0)}   (rounds ${ratios.map((r) => r.toFixed(2)).join(', ')})`);
}

console.log(`${'export, whole table as CSV (s)'.padEnd(36)} ${exportService.toFixed(2).padStart(9)} ${''.padStart(17)} ${exportFloor.toFixed(2).padStart(9)} ${''.padStart(17)} ${fmt(exportRatio, 2)}`);
console.log(`  (the median of ${EXPORT_ROUNDS} paired rounds' ratios: ${exportRatios.map((r) => r.toFixed(2)).join(', ')})`);
console.log(`  (each round, service : floor, s and CPU s: ${exportTimes.service.map((t, k) => `${t.toFixed(2)}/${(exportCpu.service[k] / 1000).toFixed(2)} : ${exportTimes.floor[k].toFixed(2)}/${(exportCpu.floor[k] / 1000).toFixed(2)}`).join(', ')})`);

console.log(`\naccess log (one info line per request) against none, same database, alternating:`);
for (const [name, { quiet, logged }] of Object.entries(logCost)) {
  console.log(`  ${name.padEnd(34)} ${fmt(logged)} against ${fmt(quiet)} req/s: ${fmt(logged / quiet, 2)}`);
}

const writes = ['create', 'patch'];
const budgets: [string, boolean, string][] = Object.entries(results).map(([name, { ratio }]) => {
  const floorShare = writes.includes(name) ? 0.8 : 0.9;
  return [`${name}: at least ${floorShare} of the floor's throughput`, ratio >= floorShare, ratio.toFixed(2)];
});
budgets.push(['export: at most 1.1x the floor\'s time', exportRatio <= 1.1, `${exportRatio.toFixed(2)}x`]);
console.log('\nbudgets:');
for (const [what, ok, figure] of budgets) console.log(`  ${ok ? 'PASS' : 'FAIL'}  ${what} (${figure})`);
process.exit(budgets.every(([, ok]) => ok) ? 0 : 1);
