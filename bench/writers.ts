// Writers that scale (issue 27): many clients writing one table at once. Single-row creates (whole
// dataset rows with client ids, as users send them) and patches, from 10 and from 64 connections
// to one instance; on PostgreSQL also from 64 connections split over two instances on the one
// database. Throughput must not fall from 10 to 64 writers, and two instances must not be slower
// than one. Each comparison runs in paired rounds (the two sides back to back, alternating which
// goes first) and the figure is the median of the rounds' ratios.
// The machine's idle CPU share is shown beside each side: where it is near 0 the load (service,
// database and the client on one 2-core machine) already used every core, and more writers cannot
// add throughput, only show that they do not take it away.
// Afterwards the change feed is read to its end: one entry per write, numbers strictly increasing.
//   npm run build && node --import tsx bench/writers.ts [rows=100000] [seconds=5]    (BENCH_DATABASE=postgres, BENCH_ROUNDS=3)
import fs from 'node:fs';
import path from 'node:path';
import { type Load, type LoadRequest, load } from './support/load.ts';
import { median, pairedRounds } from './support/rounds.ts';
import { api, createBenchTable, createBodies, dataset, loadThroughApi, floorTable } from './support/dataset.ts';
import { BENCH_KEY, benchDatabase, type Proc, startFloor, startService } from './support/processes.ts';
import { scatteredRows } from './support/scattered.ts';

const N = Number(process.argv[2] ?? 100_000);
const SECONDS = Number(process.argv[3] ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const { dir, postgres, env, db } = await benchDatabase('writers');
const ds = await dataset();

const first = await startService(env);
const table = await createBenchTable(first.url);
const t0 = Date.now();
await loadThroughApi(first.url, 'bench', N);
console.log(`loaded ${N} rows into ${postgres ? 'PostgreSQL' : 'SQLite'} through the API in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
// A second instance on the same database (PostgreSQL only: SQLite's file belongs to one process).
const second: Proc | null = postgres ? await startService({ ...env, ROWHOUSE_DATA_DIR: fs.mkdtempSync(path.join(dir, 'second-')) }) : null;
// The control on PostgreSQL: two raw-SQL floors (bench/floor-server-pg.ts, a pool of 10 each, as
// the service's) on the same table, so that what two processes cost PostgreSQL itself is seen
// apart from the service.
const floorTables = [floorTable(ds, table)];
// On both databases, one floor also takes 64 writers against 10: whether the database (and the
// machine) itself gives more or less with more writers, apart from the service.
const floors: Proc[] = postgres ? [await startFloor(postgres.url, floorTables), await startFloor(postgres.url, floorTables)] : [await startFloor(db, floorTables)];

const auth = { 'x-api-key': BENCH_KEY };
const createBody = createBodies(ds, N);
const someRow = scatteredRows(N);
let p = 0;
const requests: Record<string, LoadRequest> = {
  create: { method: 'POST', path: '/api/tables/bench/rows', body: createBody, headers: auth },
  patch: {
    method: 'PATCH',
    path: () => `/api/tables/bench/rows/${ds.rowId(someRow())}`,
    body: () => JSON.stringify({ values: { amount: (p++ % 10000) + 0.25 } }),
    headers: auth,
  },
};
let writes = 0;
/** The machine's CPU ticks so far: all, and idle (from /proc/stat). */
function cpuTicks(): { all: number; idle: number } {
  const ticks = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return { all: ticks.reduce((a, b) => a + b, 0), idle: ticks[3] + ticks[4] };
}
/** Runs a load, counting its writes (the service's: `logged`) and noting the share of the machine's CPU left idle meanwhile (with the client's own work). */
async function measured(run: () => Promise<Load>, logged = true): Promise<Load & { idle: number }> {
  const before = cpuTicks();
  const l = await run();
  const after = cpuTicks();
  if (logged) writes += Math.round(l.rps * SECONDS);
  return { ...l, idle: (after.idle - before.idle) / (after.all - before.all) };
}

/** 64 connections, split evenly over the instances given; the rates added up. */
async function spread(instances: Proc[], request: LoadRequest, connections: number): Promise<Load> {
  const loads = await Promise.all(instances.map((s) => load(s.url, request, SECONDS, connections / instances.length)));
  return {
    rps: loads.reduce((sum, l) => sum + l.rps, 0),
    mean: median(loads.map((l) => l.mean)),
    p50: median(loads.map((l) => l.p50)),
    p99: Math.max(...loads.map((l) => l.p99)),
    errors: loads.reduce((sum, l) => sum + l.errors, 0),
    non2xx: loads.reduce((sum, l) => sum + l.non2xx, 0),
  };
}

interface Comparison {
  name: string;
  sides: Record<string, (Load & { idle: number })[]>;
  ratio: number;
  ratios: number[];
}
const comparisons: Comparison[] = [];
async function compare(name: string, a: [string, () => Promise<Load & { idle: number }>], b: [string, () => Promise<Load & { idle: number }>]): Promise<void> {
  await a[1]();
  await b[1]();
  const sides = await pairedRounds(ROUNDS, [a[0], b[0]], (side) => (side === a[0] ? a[1]() : b[1]()));
  const ratios = sides[b[0]].map((l, k) => l.rps / sides[a[0]][k].rps);
  comparisons.push({ name, sides, ratio: median(ratios), ratios });
}

for (const [kind, request] of Object.entries(requests)) {
  await compare(
    `${kind}: 64 writers against 10, one instance`,
    ['10 writers', () => measured(() => load(first.url, request, SECONDS, 10))],
    ['64 writers', () => measured(() => load(first.url, request, SECONDS, 64))],
  );
  if (second) {
    await compare(
      `${kind}: 64 writers on two instances against one`,
      ['one instance', () => measured(() => spread([first], request, 64))],
      ['two instances', () => measured(() => spread([first, second], request, 64))],
    );
  }
}

// Creates through the floors take ids from the same maker: none repeats the service's.
const floorCreate: LoadRequest = { method: 'POST', path: '/rows', body: createBody };
await compare(
  'control, the floor: create, 64 writers against 10, one process',
  ['10 writers', () => measured(() => load(floors[0].url, floorCreate, SECONDS, 10), false)],
  ['64 writers', () => measured(() => load(floors[0].url, floorCreate, SECONDS, 64), false)],
);
if (floors.length === 2) {
  await compare(
    'control, the floor: create, 64 writers on two processes against one',
    ['one process', () => measured(() => spread([floors[0]], floorCreate, 64), false)],
    ['two processes', () => measured(() => spread(floors, floorCreate, 64), false)],
  );
}

// The feed, read to its end: every number once, increasing; as many entries as writes answered (at least).
let after = 0;
let entries = 0;
for (;;) {
  const page = await api(first.url, 'GET', `/api/tables/bench/changes?after=${after}&limit=1000`);
  for (const change of page.data as { sequence: number }[]) {
    if (change.sequence <= after) throw new Error(`the feed went from ${after} to ${change.sequence}`);
    after = change.sequence;
    entries++;
  }
  if (page.data.length === 0) break;
}

for (const f of floors) await f.stop();
await second?.stop();
await first.stop();
await postgres?.stop();
fs.rmSync(dir, { recursive: true, force: true });

const fmt = (x: number, d = 0) => x.toFixed(d).padStart(8);
console.log(`\n${N} rows on ${postgres ? 'PostgreSQL' : 'SQLite'}, ${ROUNDS} paired rounds of ${SECONDS} s per comparison; latency in ms\n`);
for (const { name, sides, ratio, ratios } of comparisons) {
  console.log(name);
  for (const [side, loads] of Object.entries(sides)) {
    const errors = loads.reduce((sum, l) => sum + l.errors + l.non2xx, 0);
    console.log(`  ${side.padEnd(14)} ${fmt(median(loads.map((l) => l.rps)))} req/s   p50 ${fmt(median(loads.map((l) => l.p50)), 1)}   p99 ${fmt(median(loads.map((l) => l.p99)), 1)}   CPU idle ${fmt(100 * median(loads.map((l) => l.idle)), 0)}%${errors ? `   ${errors} errors or non-2xx` : ''}`);
  }
  console.log(`  ratio ${ratio.toFixed(2)}   (rounds ${ratios.map((r) => r.toFixed(2)).join(', ')})`);
}
console.log(`\nchange feed: ${entries} entries (the ${N} loaded rows, then about ${writes} writes the service answered), numbers strictly increasing`);

const budgets: [string, boolean, string][] = comparisons.filter(({ name }) => !name.startsWith('control')).map(({ name, ratio }) => [`${name}: not slower (ratio at least 1.0)`, ratio >= 1.0, ratio.toFixed(2)]);
const failures = comparisons.flatMap(({ sides }) => Object.values(sides).flat()).reduce((sum, l) => sum + l.errors + l.non2xx, 0);
budgets.push(['every write answered 2xx', failures === 0, String(failures)]);
console.log('\nbudgets:');
for (const [what, ok, figure] of budgets) console.log(`  ${ok ? 'PASS' : 'FAIL'}  ${what} (${figure})`);
process.exit(budgets.every(([, ok]) => ok) ? 0 : 1);
