// Aggregates benchmark (issue 30, "Figures"): GET /rows-aggregate against the floor's hand-written
// GROUP BY (bench/floor-server.ts, floor-server-pg.ts) on the same table, in one run. The dataset's
// rows are loaded through the API (1,000-row bulk creates) and the service restarted, as in
// bench/rows.ts. Three queries: count per status; sum of amount per month of dueAt in Asia/Tokyo;
// count per (status, paid) having count > 10. Each must reach 0.8 of the floor's throughput (paired
// rounds, the median of their ratios), and each one's time alone (one request at a time, the median
// of a few) is reported beside it: at 2,000,000 rows (BENCH_ROWS) that time is the figure.
// SQLite by default; BENCH_DATABASE=postgres runs both on a PostgreSQL server the benchmark starts.
// On SQLite the floor takes Tokyo's month at a fixed +09:00 (Tokyo has no daylight-saving time);
// the service picks the zone's offset per row in SQL, from every change of the zone from 1900 to
// 2100 (store/sqlite/aggregate-sql.ts), as it must for any zone: both then call strftime per row.
//   node --import tsx bench/aggregates.ts [rows=BENCH_ROWS or 200000] [seconds=5]      (BENCH_ROUNDS=3)
import fs from 'node:fs';
import { type Load, type LoadRequest, load } from './support/load.ts';
import { median, pairedRounds } from './support/rounds.ts';
import { api, createBenchTable, dataset, loadThroughApi, floorTable } from './support/dataset.ts';
import { BENCH_KEY, benchDatabase, startFloor, startService } from './support/processes.ts';

const N = Number(process.argv[2] ?? process.env.BENCH_ROWS ?? 200_000);
const SECONDS = Number(process.argv[3] ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** Requests one at a time per side, for each query's time alone. */
const ALONE = 5;

const { dir, postgres, env, db } = await benchDatabase('aggregates');
const ds = await dataset();

let service = await startService(env);
const table = await createBenchTable(service.url);
const t0 = Date.now();
await loadThroughApi(service.url, 'bench', N);
console.log(`loaded ${N} rows into ${postgres ? 'PostgreSQL' : 'SQLite'} through the API in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
await service.stop();

service = await startService(env);
// Whatever the service says (warnings, a crash) is shown.
service.child.stderr?.on('data', (d) => process.stderr.write(d));
service.child.on('exit', (code, signal) => code !== 0 && signal !== 'SIGTERM' && console.error(`the service exited: ${code ?? signal}`));
const floor = await startFloor(db, [floorTable(ds, table)]);

const q = (o: unknown) => encodeURIComponent(JSON.stringify(o));
const aggregate = (params: Record<string, unknown>) =>
  `/api/tables/bench/rows-aggregate?${Object.entries(params)
    .map(([k, v]) => `${k}=${q(v)}`)
    .join('&')}`;
const auth = { 'x-api-key': BENCH_KEY };

const workloads: [string, LoadRequest, LoadRequest][] = [
  ['count per status', { path: aggregate({ groupBy: [{ field: 'status' }] }), headers: auth }, { path: '/agg/status' }],
  [
    'sum of amount per Tokyo month of dueAt',
    { path: aggregate({ groupBy: [{ field: 'dueAt', bucket: 'month', timeZone: 'Asia/Tokyo' }], metrics: [{ fn: 'sum', field: 'amount' }] }), headers: auth },
    { path: '/agg/tokyo-months' },
  ],
  [
    'count per (status, paid), count > 10',
    { path: aggregate({ groupBy: [{ field: 'status' }, { field: 'paid' }], having: { count: { _gt: 10 } } }), headers: auth },
    { path: '/agg/status-paid' },
  ],
];

/** The service's answer agrees with the floor's: the same groups and counts (sums within 1e-9), so both sides do the same work. */
async function sameAnswer(name: string, s: LoadRequest, f: LoadRequest): Promise<number> {
  const mine = (await api(service.url, 'GET', s.path as string)).data as { group: Record<string, unknown>; metrics: Record<string, number> }[];
  const res = await fetch(floor.url + (f.path as string));
  const theirs = ((await res.json()) as { data: Record<string, unknown>[] }).data;
  if (mine.length !== theirs.length) throw new Error(`${name}: ${mine.length} groups, the floor ${theirs.length}`);
  mine.forEach((g, i) => {
    const ours = [...Object.values(g.group).map((v) => (typeof v === 'boolean' ? Number(v) : v)), ...Object.values(g.metrics)];
    const floors = Object.values(theirs[i]).map((v) => (typeof v === 'boolean' ? Number(v) : typeof v === 'string' && /^\d+(\.\d+)?$/.test(v) ? Number(v) : v));
    const same = ours.length === floors.length && ours.every((v, k) => (typeof v === 'number' && typeof floors[k] === 'number' ? Math.abs(v - (floors[k] as number)) <= 1e-9 * Math.abs(v) : v === floors[k]));
    if (!same) throw new Error(`${name}: group ${i} is ${JSON.stringify(ours)}, the floor's ${JSON.stringify(floors)}`);
  });
  return mine.length;
}

/** Milliseconds of one request at a time: the median of ALONE, after one warm-up. */
async function alone(base: string, r: LoadRequest): Promise<number> {
  const once = async () => {
    const started = process.hrtime.bigint();
    const res = await fetch(base + (r.path as string), { headers: r.headers });
    if (!res.ok) throw new Error(`${r.path} → ${res.status}: ${(await res.text()).slice(0, 300)}`);
    await res.arrayBuffer();
    return Number(process.hrtime.bigint() - started) / 1e6;
  };
  await once();
  const times: number[] = [];
  for (let i = 0; i < ALONE; i++) times.push(await once());
  return median(times);
}

const results: Record<string, { groups: number; seconds: number; connections: number; service: Load; floor: Load; ratio: number; ratios: number[]; alone: { service: number; floor: number } }> = {};
for (const [name, s, f] of workloads) {
  const groups = await sameAnswer(name, s, f);
  const single = await pairedRounds(1, ['service', 'floor'], (side) => alone(side === 'service' ? service.url : floor.url, side === 'service' ? s : f));
  // A query taking over 0.1 s alone gets windows long enough to finish several (at most 30 s), from 2
  // connections (the machine's cores) rather than 10: else a window ends before any answer does.
  const slowest = Math.max(single.service[0], single.floor[0]) / 1000;
  // (SQLite's floor answers one query at a time: 10 waiting on a 0.7 s query took a whole window.)
  const seconds = Math.min(30, Math.max(SECONDS, Math.ceil(10 * slowest)));
  const connections = slowest > 0.1 ? 2 : 10;
  // Two requests at once on 2 cores take about twice as long each: a timeout of 10x the time alone (at 2,000,000 rows, seconds).
  const timeout = Math.max(10, Math.ceil(10 * slowest));
  const runs = await pairedRounds(ROUNDS, ['service', 'floor'], (side) => load(side === 'service' ? service.url : floor.url, side === 'service' ? s : f, seconds, connections, timeout));
  const ratios = runs.service.map((r, k) => r.rps / runs.floor[k].rps);
  const med = (xs: Load[]): Load => ({
    rps: median(xs.map((r) => r.rps)),
    mean: median(xs.map((r) => r.mean)),
    p50: median(xs.map((r) => r.p50)),
    p99: median(xs.map((r) => r.p99)),
    errors: xs.reduce((n, r) => n + r.errors, 0),
    non2xx: xs.reduce((n, r) => n + r.non2xx, 0),
  });
  results[name] = { groups, seconds, connections, service: med(runs.service), floor: med(runs.floor), ratio: median(ratios), ratios, alone: { service: single.service[0], floor: single.floor[0] } };
  if (results[name].service.non2xx > 0 || results[name].service.errors > 0) console.log(`  ! ${name}: ${results[name].service.non2xx} non-2xx, ${results[name].service.errors} errors`);
}

await service.stop();
await floor.stop();
await postgres?.stop();
fs.rmSync(dir, { recursive: true, force: true });

const fmt = (x: number, d = 0) => x.toFixed(d).padStart(8);
console.log(`\n${N} rows on ${postgres ? 'PostgreSQL' : 'SQLite'}, each query in ${ROUNDS} rounds on each side, back to back (seconds and connections per round after each query); the ratio is the median of the rounds'; latency in ms; "alone": one request at a time, median of ${ALONE}\n`);
console.log(`${'query'.padEnd(40)} ${'groups'.padStart(6)} ${'svc req/s'.padStart(9)} ${'p50'.padStart(8)} ${'floor r/s'.padStart(9)} ${'p50'.padStart(8)} ${'ratio'.padStart(8)} ${'alone svc'.padStart(9)} ${'floor'.padStart(8)}`);
for (const [name, r] of Object.entries(results)) {
  console.log(
    `${name.padEnd(40)} ${String(r.groups).padStart(6)} ${fmt(r.service.rps, 1).padStart(9)} ${fmt(r.service.p50, 1)} ${fmt(r.floor.rps, 1).padStart(9)} ${fmt(r.floor.p50, 1)} ${fmt(r.ratio, 2)} ${fmt(r.alone.service, 1).padStart(9)} ${fmt(r.alone.floor, 1)}   (rounds ${r.ratios.map((x) => x.toFixed(2)).join(', ')}; ${r.seconds} s, ${r.connections} connections)`,
  );
}
const budgets: [string, boolean, string][] = Object.entries(results).map(([name, { ratio }]) => [`${name}: at least 0.8 of the floor's throughput`, Number.isFinite(ratio) && ratio >= 0.8, ratio.toFixed(2)]);
console.log('\nbudgets:');
for (const [what, ok, figure] of budgets) console.log(`  ${ok ? 'PASS' : 'FAIL'}  ${what} (${figure})`);
process.exit(budgets.every(([, ok]) => ok) ? 0 : 1);
