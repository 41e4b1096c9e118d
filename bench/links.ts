// Links benchmark (issue 28, "Figures"): orders linked to customers, in one run. N orders (whole
// dataset rows plus a `customer` link, paired with an `orders` inverse field on the customers)
// linked to 10,000 customers (with a `country`), all loaded through the API (1,000-row bulk
// creates) and the service restarted, as a user's tables would be. Customer 0 holds the last tenth
// of the orders (20,000 of 200,000): the large fan-out; the others about 18 orders each. SQLite by default; BENCH_DATABASE=postgres runs
// everything on a PostgreSQL server the benchmark starts. Each comparison runs in paired rounds
// (the two sides back to back, alternating which goes first); its figure is the median of the
// rounds' ratios.
// - orders filtered by `customer _some {country _eq "JP"}`, amount desc (indexed), against the raw-SQL
//   floor's hand-written EXISTS through the same edge table (bench/floor-server*.ts /linkedSome): ≥ 0.8;
// - the first page with `expand=customer` against the same page without it: ≥ 0.7 (its customers are
//   ordinary ones); the same for a page of customer 0's orders, reported (each expanded customer
//   carries its `orders` value, 20,000 ids);
// - get of customer 0 (its `orders` value holds 20,000 ids): its time and size, reported;
// - bulk creates of 1,000 orders each linking a customer against the same orders without the link: ≥ 0.8;
//   the same into a table whose link is one-way (no inverse field to keep in step), reported.
// Each comparison also prints the CPU time of the serving process per request (per bulk for the
// writes), from /proc, a side against the other: on a loaded machine, steadier than throughput.
//   npm run build && node --import tsx bench/links.ts [orders=200000] [seconds=5]     (BENCH_ROUNDS=3, BENCH_BULKS=5, BENCH_CUSTOMERS=10000)
import fs from 'node:fs';
import { type Load, type LoadRequest, load } from './support/load.ts';
import { median, pairedRounds } from './support/rounds.ts';
import { api, createBenchTable, dataset, loadThroughApi } from './support/dataset.ts';
import { BENCH_KEY, benchDatabase, cpuMs, startFloor, startService } from './support/processes.ts';
import { edgesOf } from '../src/domain/field-types/link.ts';
import type { FieldDef } from '../src/domain/field-types/field-type.ts';
import { fieldColumn } from '../src/domain/row-columns.ts';
import { physicalTable } from '../src/store/user-tables.ts';

const N = Number(process.argv[2] ?? 200_000);
const SECONDS = Number(process.argv[3] ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BULKS = Number(process.env.BENCH_BULKS ?? 5);
// BENCH_CUSTOMERS: fewer customers for a smaller run whose customers hold as many orders as at
// 200,000 orders and 10,000 (about 18 each: 2,500 at 50,000), as the expanded page's size depends on it.
const CUSTOMERS = Number(process.env.BENCH_CUSTOMERS ?? 10_000);
const COUNTRIES = ['US', 'DE', 'FR', 'GB', 'BR', 'IN', 'CN', 'KR', 'IT', 'JP'];

const customerId = (k: number) => `cust-${k}`;
/** Customer k's country: JP for one customer in ten (not customer 0, so that the filter selects about a tenth of the orders). */
const countryOf = (k: number) => COUNTRIES[(k + 1) % COUNTRIES.length];
/** Order i's customer: customer 0 for the last tenth of the orders (the fan-out), otherwise one of the others, spread. */
const FAN_OUT = Math.ceil(N / 10);
const customerOf = (i: number) => customerId(i >= N - FAN_OUT ? 0 : 1 + ((i * 7919) % (CUSTOMERS - 1)));

const { dir, postgres, env, db } = await benchDatabase('links');
const ds = await dataset();

let service = await startService(env);
const customers = await api(service.url, 'POST', '/api/tables', {
  code: 'customers',
  name: 'Customers',
  fields: [
    { code: 'name', type: 'text' },
    { code: 'country', type: 'text' },
  ],
});
const orders = await createBenchTable(service.url, 'orders', [{ code: 'customer', type: 'link', options: { table: 'customers', inverse: { code: 'orders' } } }]);
// An empty table of the same orders whose link is one-way: for the bulk creates only.
await createBenchTable(service.url, 'oneway', [{ code: 'customer', type: 'link', options: { table: 'customers' } }]);
const t0 = Date.now();
for (let k = 0; k < CUSTOMERS; k += 1000) {
  const data = Array.from({ length: Math.min(1000, CUSTOMERS - k) }, (_, j) => ({ id: customerId(k + j), values: { name: `Customer ${k + j}`, country: countryOf(k + j) } }));
  await api(service.url, 'POST', '/api/tables/customers/rows-bulk', { data });
}
await loadThroughApi(service.url, 'orders', N, (i) => ({ customer: customerOf(i) }));
console.log(`loaded ${CUSTOMERS} customers and ${N} orders into ${postgres ? 'PostgreSQL' : 'SQLite'} through the API in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
await service.stop();

service = await startService(env);
const link = orders.fields.find((f) => f.code === 'customer') as FieldDef;
const edges = edgesOf(link);
const countryColumn = fieldColumn((customers.fields as FieldDef[]).find((f) => f.code === 'country')?.id as string);
const floor = await startFloor(
  db,
  [
    { physical: orders.physical, columns: Object.fromEntries([...ds.FIELDS.map((f) => f.code), 'customer'].map((code) => [code, orders.column(code)])) },
    { physical: physicalTable(customers.id), columns: { name: fieldColumn(customers.fields[0].id), country: countryColumn } },
  ],
  { edges: edges.table, mine: edges.mine, other: edges.other, target: 1, column: countryColumn },
);

const q = (o: unknown) => encodeURIComponent(JSON.stringify(o));
const auth = { 'x-api-key': BENCH_KEY };
const japanPath =
  `/api/tables/orders/rows?filter=${q({ values: { customer: { _some: { values: { country: { _eq: 'JP' } } } } } })}` +
  `&sort=${q([{ amount: { direction: 'desc', nulls: 'nullsLast' } }, { id: { direction: 'desc', nulls: 'nullsLast' } }])}`;
// Both answer the same rows (the service's first 50 of the floor's 51).
const [mine, theirs] = [await api(service.url, 'GET', japanPath), (await (await fetch(`${floor.url}/linkedSome?v=JP`)).json()) as { data: { id: string }[] }];
if (mine.data.length !== 50 || mine.data.some((r: { id: string }, k: number) => r.id !== theirs.data[k].id)) throw new Error('the service and the floor answer different rows for the JP filter');

/** The medians of runs, field by field; their failures added up. */
const medianOf = (runs: Load[]): Load => ({
  rps: median(runs.map((r) => r.rps)),
  mean: median(runs.map((r) => r.mean)),
  p50: median(runs.map((r) => r.p50)),
  p99: median(runs.map((r) => r.p99)),
  errors: runs.reduce((n, r) => n + r.errors, 0),
  non2xx: runs.reduce((n, r) => n + r.non2xx, 0),
});
interface Figure {
  what: string;
  a: string;
  b: string;
  unit: string;
  sideA: number;
  sideB: number;
  ratio: number;
  ratios: number[];
  goal: number;
  /** The serving process's CPU time per answered request, in µs (median of the rounds), per side: steadier than throughput on a loaded machine. */
  cpu?: [number, number];
}
const figures: Figure[] = [];

/** One load, with the CPU time its serving process spent per answered request (from /proc: other load barely moves it). */
async function measuredLoad(base: string, request: LoadRequest, pid: number | undefined): Promise<Load & { cpuUs: number }> {
  const before = pid === undefined ? 0 : cpuMs(pid).total;
  const result = await load(base, request, SECONDS);
  const cpuUs = pid === undefined ? NaN : ((cpuMs(pid).total - before) * 1000) / Math.max(1, result.rps * SECONDS);
  return { ...result, cpuUs };
}

/** Two loads against each other in paired rounds: throughput, the median of the rounds' ratios; and each side's CPU per request. */
async function compare(what: string, goal: number, [a, baseA, reqA, pidA]: [string, string, LoadRequest, number?], [b, baseB, reqB, pidB]: [string, string, LoadRequest, number?]): Promise<void> {
  await load(baseA, reqA, 1); // warm-up, both
  await load(baseB, reqB, 1);
  const runs = await pairedRounds(ROUNDS, [a, b], (side) => (side === a ? measuredLoad(baseA, reqA, pidA) : measuredLoad(baseB, reqB, pidB)));
  const ratios = runs[a].map((r, k) => r.rps / runs[b][k].rps);
  for (const side of [a, b]) {
    const m = medianOf(runs[side]);
    if (m.non2xx > 0 || m.errors > 0) console.log(`  ! ${what}, ${side}: ${m.non2xx} non-2xx, ${m.errors} errors`);
  }
  const cpu: [number, number] = [median(runs[a].map((r) => r.cpuUs)), median(runs[b].map((r) => r.cpuUs))];
  figures.push({ what, a, b, unit: 'req/s', sideA: medianOf(runs[a]).rps, sideB: medianOf(runs[b]).rps, ratio: median(ratios), ratios, goal, cpu });
}

await compare(
  'customer _some {country "JP"}, amount desc',
  0.8,
  ['service', service.url, { path: japanPath, headers: auth }, service.child.pid],
  ['floor', floor.url, { path: '/linkedSome?v=JP' }, floor.child.pid],
);
await compare(
  'first page, expand=customer',
  0.7,
  ['expand', service.url, { path: '/api/tables/orders/rows?expand=customer', headers: auth }, service.child.pid],
  ['plain', service.url, { path: '/api/tables/orders/rows', headers: auth }, service.child.pid],
);
// Five rows a page: each expanded one carries customer 0's 20,000 ids (about 0.8 MB).
const fanOutPage = `/api/tables/orders/rows?pageSize=5&filter=${q({ values: { customer: { _eq: customerId(0) } } })}`;
// One request at a time (one can take seconds): the figure is the plain page's time over the expanded one's.
const once = async (url: string) => {
  const started = process.hrtime.bigint();
  const res = await fetch(service.url + url, { headers: auth });
  if (!res.ok) throw new Error(`${url} → ${res.status}`);
  await res.arrayBuffer();
  return Number(process.hrtime.bigint() - started) / 1e6;
};
const fanOutRuns = await pairedRounds(ROUNDS, ['expand', 'plain'] as const, (side) => once(side === 'expand' ? `${fanOutPage}&expand=customer` : fanOutPage));
const fanOutRatios = fanOutRuns.plain.map((t, k) => t / fanOutRuns.expand[k]);
figures.push({
  what: "customer 0's orders (5), expand=customer",
  a: 'expand',
  b: 'plain',
  unit: 'ms',
  sideA: median(fanOutRuns.expand),
  sideB: median(fanOutRuns.plain),
  ratio: median(fanOutRatios),
  ratios: fanOutRatios,
  goal: 0,
});
const pageBytes = async (url: string) => (await (await fetch(service.url + url, { headers: auth })).arrayBuffer()).byteLength;
const sizes = {
  plain: await pageBytes('/api/tables/orders/rows'),
  expand: await pageBytes('/api/tables/orders/rows?expand=customer'),
  fanOutPlain: await pageBytes(fanOutPage),
  fanOutExpand: await pageBytes(`${fanOutPage}&expand=customer`),
};

// The fan-out: customer 0's record, its `orders` value holding every tenth order's id.
const bigPath = `/api/tables/customers/rows/${customerId(0)}`;
const big = await fetch(service.url + bigPath, { headers: auth });
const bigBytes = (await big.arrayBuffer()).byteLength;
const bigLinks = (await api(service.url, 'GET', bigPath)).values.orders.length;
await load(service.url, { path: bigPath, headers: auth }, 1);
const fanOut = await load(service.url, { path: bigPath, headers: auth }, SECONDS, 1);
const ordinary = await load(service.url, { path: `/api/tables/customers/rows/${customerId(1)}`, headers: auth }, SECONDS, 1);

/** Rows per second of BULKS bulk creates of 1,000 orders into `table`, one after another. */
let made = 0;
async function bulks(table: string, linked: boolean): Promise<{ rate: number; cpuUs: number }> {
  const source = [...ds.rows(1000, 11)];
  const pid = service.child.pid as number;
  const cpuBefore = cpuMs(pid).total;
  const started = process.hrtime.bigint();
  for (let k = 0; k < BULKS; k++) {
    const data = source.map((r) => {
      const i = made++;
      return { id: `bulk-${i}`, values: linked ? { ...r.values, customer: customerId(1 + ((i * 104729) % (CUSTOMERS - 1))) } : r.values };
    });
    const res = await fetch(`${service.url}/api/tables/${table}/rows-bulk`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ data }) });
    if (!res.ok) throw new Error(`rows-bulk → ${res.status}: ${(await res.text()).slice(0, 300)}`);
    await res.arrayBuffer();
  }
  return { rate: (BULKS * 1000) / (Number(process.hrtime.bigint() - started) / 1e9), cpuUs: ((cpuMs(pid).total - cpuBefore) * 1000) / BULKS };
}
for (const [table, what, goal] of [
  ['orders', 'bulk create of 1,000 orders', 0.8],
  ['oneway', 'the same, one-way link (no inverse)', 0],
] as const) {
  await bulks(table, true); // warm-up, both
  await bulks(table, false);
  const runs = await pairedRounds(ROUNDS, ['linked', 'unlinked'] as const, (side) => bulks(table, side === 'linked'));
  const ratios = runs.linked.map((r, k) => r.rate / runs.unlinked[k].rate);
  figures.push({
    what,
    a: 'with link',
    b: 'without',
    unit: 'rows/s',
    sideA: median(runs.linked.map((r) => r.rate)),
    sideB: median(runs.unlinked.map((r) => r.rate)),
    ratio: median(ratios),
    ratios,
    goal,
    cpu: [median(runs.linked.map((r) => r.cpuUs)), median(runs.unlinked.map((r) => r.cpuUs))],
  });
}

await service.stop();
await floor.stop();
await postgres?.stop();
fs.rmSync(dir, { recursive: true, force: true });

const fmt = (x: number, d = 0) => x.toFixed(d).padStart(9);
console.log(`\n${N} orders linked to ${CUSTOMERS} customers on ${postgres ? 'PostgreSQL' : 'SQLite'}, ${ROUNDS} paired rounds (${SECONDS} s a side for the reads, ${BULKS} bulks a side for the writes); the ratio is the median of the rounds'; reads from 10 connections\n`);
console.log(`${'workload'.padEnd(44)} ${'side a'.padStart(24)} ${'side b'.padStart(24)} ${'ratio'.padStart(6)}   rounds; CPU of the serving process a : b (µs per request or bulk; b : a)`);
for (const f of figures) {
  const cpu = f.cpu ? `; CPU ${f.cpu[0].toFixed(0)} : ${f.cpu[1].toFixed(0)} (${(f.cpu[1] / f.cpu[0]).toFixed(2)})` : '';
  console.log(`${f.what.padEnd(44)} ${`${f.a} ${fmt(f.sideA)} ${f.unit}`.padStart(24)} ${`${f.b} ${fmt(f.sideB)} ${f.unit}`.padStart(24)} ${f.ratio.toFixed(2).padStart(6)}   ${f.ratios.map((r) => r.toFixed(2)).join(', ')}${cpu}`);
}
console.log(
  `\nget of customer 0 (${bigLinks} linked orders), one connection: ${(bigBytes / 1024).toFixed(0)} KiB, mean ${fanOut.mean.toFixed(2)} ms, p99 ${fanOut.p99.toFixed(1)} ms, ${fanOut.rps.toFixed(0)} req/s` +
    ` (a customer with about ${Math.round((N * 0.9) / (CUSTOMERS - 1))} orders: mean ${ordinary.mean.toFixed(2)} ms, ${ordinary.rps.toFixed(0)} req/s)`,
);
const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`;
console.log(`page sizes: first page ${kib(sizes.plain)}, expanded ${kib(sizes.expand)}; customer 0's orders ${kib(sizes.fanOutPlain)}, expanded ${kib(sizes.fanOutExpand)}`);

const budgets: [string, boolean, string][] = figures.filter((f) => f.goal > 0).map((f) => [`${f.what}: ${f.a} at least ${f.goal} of ${f.b}`, f.ratio >= f.goal, f.ratio.toFixed(2)]);
budgets.push([`get of customer 0 answers all ${FAN_OUT} of its orders`, bigLinks === FAN_OUT, String(bigLinks)]);
console.log('\nbudgets:');
for (const [what, ok, figure] of budgets) console.log(`  ${ok ? 'PASS' : 'FAIL'}  ${what} (${figure})`);
process.exit(budgets.every(([, ok]) => ok) ? 0 : 1);
