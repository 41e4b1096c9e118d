// Where a workload's CPU time goes in the service (a development aid, not a benchmark): loads
// 20,000 dataset rows through the API, restarts the service under `node --cpu-prof`, sends one
// workload for a few seconds, and sums the profile's self time by module (src/ files, and
// packages under node_modules) and by function.
//   node --import tsx bench/profile.ts [get|first|paid|create|idemcreate|patch|bulk|linkbulk|onewaybulk|nolinkbulk|expand|linkfirst|export] [seconds=5]      (BENCH_DATABASE=postgres too)
//   (onewaybulk and nolinkbulk: the same bulks into a table whose link is one-way, with and without the link;
//   linkbulk: bulk creates into a table of the dataset's fields plus a `customer` link, paired with an
//   `orders` field on a table of 1,000 customers, each row linking one of them; expand: the first page
//   of the bench table whose rows link PROFILE_CUSTOMERS (1,000) customers that way, with
//   `expand=customer`, and linkfirst the same page without it)
//   node --import tsx bench/profile.ts import [rows=200000]: one CSV import of that many dataset rows into an empty table
// PROFILE_ROWS=n loads n rows (20,000 by default). PROFILE_FLOOR=1 profiles the raw-SQL floor (bench/floor-server*.ts) instead, on get, first, paid, create and patch.
// PROFILE_KEEP=file.cpuprofile keeps the profile there (for Chrome's DevTools, or a closer look).
// PROFILE_LOG_LEVEL=info runs the service as users do by default, with its access log (stdout read by this process).
// Beside the profile: the server process's CPU per request, and on PostgreSQL the database's (all
// its processes, those that ended included: databaseCpuMs), with its transactions, statements' rows and WAL records per request.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { SourceMap, type SourceMapping } from 'node:module';
import path from 'node:path';
// @ts-expect-error: a plain JavaScript module of the test setup, without type declarations
import { startPostgres } from '../test/support/postgres-server.mjs';
import { csvOfDataset } from './support/csv.ts';
import { api, createBenchTable, createBodies, dataset, loadThroughApi, floorTable } from './support/dataset.ts';
import { load } from './support/load.ts';
import { BENCH_KEY, ROOT, cpuMs, databaseCpuMs, startFloor, startService } from './support/processes.ts';
import pg from 'pg';
import { scatteredRows } from './support/scattered.ts';

const WORKLOAD = process.argv[2] ?? 'get';
const SECONDS = Number(process.argv[3] ?? 5);
const N = Number(process.env.PROFILE_ROWS ?? 20_000);

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Which module a frame belongs to: a package, a file of src/, node's own code, or the engine. */
function moduleOf(url: string): string {
  if (!url) return '(engine: GC, idle, native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  if (url.startsWith('node:')) return 'node (' + url.slice(5).split('/')[0] + ')';
  const local = url.replace(/^file:\/\//, '');
  return local.startsWith(ROOT) ? path.relative(ROOT, local) : local;
}

/** The build is one bundle (dist/cli.js): its frames are placed back in their sources through its source map. */
const BUNDLE = path.join(ROOT, 'dist/cli.js');
const bundleMap = fs.existsSync(BUNDLE + '.map') ? new SourceMap(JSON.parse(fs.readFileSync(BUNDLE + '.map', 'utf8'))) : null;
function source(frame: ProfileNode['callFrame']): { url: string; line: number } {
  const entry = (frame.url.endsWith(BUNDLE) ? bundleMap?.findEntry(frame.lineNumber, frame.columnNumber) : undefined) as Partial<SourceMapping> | undefined;
  if (!entry?.originalSource || entry.originalLine === undefined) return { url: frame.url, line: frame.lineNumber };
  return { url: path.resolve(path.dirname(BUNDLE), entry.originalSource), line: entry.originalLine };
}

/**
 * Sums the profile's self times from `fromMs` to `toMs` after the process started (its start, the
 * warm-up and its stop left out, which at a few seconds of load weigh as much as the load), and says each share's
 * CPU µs per request (`requests` answered in that window).
 */
function summarise(profile: Profile, fromMs: number, toMs: number, requests: number): void {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfMs = new Map<number, number>();
  let at = 0;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] / 1000;
    if (at >= fromMs && at <= toMs) selfMs.set(id, (selfMs.get(id) ?? 0) + profile.timeDeltas[i] / 1000);
  });
  const total = [...selfMs.values()].reduce((a, b) => a + b, 0);
  const modules = new Map<string, number>();
  const functions = new Map<string, number>();
  for (const [id, ms] of selfMs) {
    const frame = (byId.get(id) as ProfileNode).callFrame;
    const { functionName } = frame;
    if (functionName === '(idle)') continue;
    const { url, line: lineNumber } = source(frame);
    const mod = moduleOf(url);
    modules.set(mod, (modules.get(mod) ?? 0) + ms);
    const fn = `${functionName || '(anonymous)'}  ${mod}:${lineNumber + 1}`;
    functions.set(fn, (functions.get(fn) ?? 0) + ms);
  }
  const busy = [...modules.values()].reduce((a, b) => a + b, 0);
  const top = (m: Map<string, number>, k: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, k);
  const share = (ms: number) => `${((100 * ms) / busy).toFixed(1).padStart(5)}% ${((1000 * ms) / requests).toFixed(1).padStart(6)} µs/req`;
  console.log(`\nthe measured load only: busy ${busy.toFixed(0)} ms of ${total.toFixed(0)} ms sampled (${((1000 * busy) / requests).toFixed(0)} µs a request); self time by module:`);
  for (const [name, ms] of top(modules, 18)) console.log(`  ${share(ms)}  ${name}`);
  console.log('\ntop functions by self time:');
  for (const [name, ms] of top(functions, Number(process.env.PROFILE_TOP ?? 25))) console.log(`  ${share(ms)}  ${name}`);
}

/**
 * PostgreSQL: what the database has done so far: its processes' CPU time (ms, databaseCpuMs),
 * committed transactions, rows inserted and updated, WAL records and bytes. null on SQLite.
 */
async function databaseActivity(): Promise<{ cpuMs: number; xacts: number; inserted: number; updated: number; walRecords: number; walBytes: number } | null> {
  if (!postgres) return null;
  const client = new pg.Client({ connectionString: postgres.url });
  await client.connect();
  try {
    const cpu = await databaseCpuMs(client);
    // Statistics are flushed by each backend at most once a second: give them time.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await client.query('select pg_stat_clear_snapshot()');
    const { rows: [d] } = await client.query('select xact_commit::float8 as x, tup_inserted::float8 as i, tup_updated::float8 as u from pg_stat_database where datname = current_database()');
    const { rows: [w] } = await client.query('select wal_records::float8 as r, wal_bytes::float8 as b from pg_stat_wal');
    return { cpuMs: cpu, xacts: d.x, inserted: d.i, updated: d.u, walRecords: w.r, walBytes: w.b };
  } finally {
    await client.end();
  }
}

const ds = await dataset();
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rh-prof-'));
const profiles = path.join(dir, 'profiles');
const postgres = process.env.BENCH_DATABASE === 'postgres' ? await startPostgres() : null;
const env = { ROWHOUSE_DATA_DIR: dir, ...(postgres ? { DATABASE_URL: postgres.url } : {}), ...(process.env.PROFILE_LOG_LEVEL ? { ROWHOUSE_LOG_LEVEL: process.env.PROFILE_LOG_LEVEL } : {}) };
let service = await startService(env);
// expand and linkfirst: the bench table's rows each link one of PROFILE_CUSTOMERS customers (paired
// with their `orders` field, so each customer carries about N / PROFILE_CUSTOMERS order ids).
const LINKED = WORKLOAD === 'expand' || WORKLOAD === 'linkfirst';
const CUSTOMERS = Number(process.env.PROFILE_CUSTOMERS ?? 1000);
if (LINKED) {
  await api(service.url, 'POST', '/api/tables', { code: 'customers', name: 'Customers', fields: [{ code: 'name', type: 'text' }, { code: 'country', type: 'text' }] });
  for (let c = 0; c < CUSTOMERS; c += 1000) {
    const data = Array.from({ length: Math.min(1000, CUSTOMERS - c) }, (_, j) => ({ id: `cust-${c + j}`, values: { name: `Customer ${c + j}`, country: 'JP' } }));
    await api(service.url, 'POST', '/api/tables/customers/rows-bulk', { data });
  }
}
const table = await createBenchTable(service.url, 'bench', LINKED ? [{ code: 'customer', type: 'link', options: { table: 'customers', inverse: { code: 'orders' } } }] : []);
await loadThroughApi(service.url, 'bench', N, LINKED ? (i) => ({ customer: `cust-${(i * 7919) % CUSTOMERS}` }) : undefined);
if (WORKLOAD === 'linkbulk' || WORKLOAD === 'onewaybulk' || WORKLOAD === 'nolinkbulk') {
  await api(service.url, 'POST', '/api/tables', { code: 'customers', name: 'Customers', fields: [{ code: 'country', type: 'text' }] });
  await api(service.url, 'POST', '/api/tables/customers/rows-bulk', { data: Array.from({ length: 1000 }, (_, c) => ({ id: `cust-${c}`, values: { country: 'JP' } })) });
  await createBenchTable(service.url, 'linked', [{ code: 'customer', type: 'link', options: { table: 'customers', inverse: { code: 'orders' } } }]);
  await createBenchTable(service.url, 'oneway', [{ code: 'customer', type: 'link', options: { table: 'customers' } }]);
}
await service.stop();

const FLOOR = process.env.PROFILE_FLOOR === '1';
process.env.PROFILE_SERVICE = profiles;
const profiledFrom = performance.now();
service = FLOOR
  ? await startFloor(postgres ? postgres.url : path.join(dir, 'rowhouse.db'), [
      floorTable(ds, table),
    ])
  : await startService(env);
delete process.env.PROFILE_SERVICE;
const someRow = scatteredRows(N);
const auth = { 'x-api-key': BENCH_KEY };
const q = (o: unknown) => encodeURIComponent(JSON.stringify(o));
const paid =
  `/api/tables/bench/rows?filter=${q({ values: { status: { _eq: 'paid' }, amount: { _gt: 5000 } } })}` +
  `&sort=${q([{ amount: { direction: 'desc', nulls: 'nullsLast' } }, { id: { direction: 'desc', nulls: 'nullsLast' } }])}`;
const bulkBody = JSON.stringify({ data: [...ds.rows(1000, 7)].map((r) => ({ values: r.values })) });
let p = 0;
const createBody = createBodies(ds, N);
/** A bulk of 1,000 dataset rows, each linking a customer: every customer once (7919 is prime to 1,000), as bench/links.ts's bulks link 1,000 different ones. */
const linkedBulkBody = () => JSON.stringify({ data: [...ds.rows(1000, 7)].map((r, j) => ({ values: { ...r.values, customer: `cust-${(j * 7919) % 1000}` } })) });
const serviceRequests = {
  create: { method: 'POST' as const, path: '/api/tables/bench/rows', body: createBody, headers: auth },
  // The same create with a fresh Idempotency-Key on each (bench/access.ts).
  idemcreate: { method: 'POST' as const, path: '/api/tables/bench/rows', body: createBody, headers: auth, moreHeaders: () => ({ 'idempotency-key': randomUUID() }) },
  patch: { method: 'PATCH' as const, path: () => `/api/tables/bench/rows/${ds.rowId(someRow())}`, body: () => JSON.stringify({ values: { amount: (p++ % 10000) + 0.25 } }), headers: auth },
  bulk: { method: 'POST' as const, path: '/api/tables/bench/rows-bulk', body: () => bulkBody, headers: auth },
  linkbulk: {
    method: 'POST' as const,
    path: '/api/tables/linked/rows-bulk',
    body: linkedBulkBody,
    headers: auth,
  },
  // The same bulks into a table whose link is one-way (no inverse), and into it without the link.
  onewaybulk: {
    method: 'POST' as const,
    path: '/api/tables/oneway/rows-bulk',
    body: linkedBulkBody,
    headers: auth,
  },
  nolinkbulk: { method: 'POST' as const, path: '/api/tables/oneway/rows-bulk', body: () => JSON.stringify({ data: [...ds.rows(1000, 7)].map((r) => ({ values: r.values })) }), headers: auth },
  first: { path: '/api/tables/bench/rows', headers: auth },
  expand: { path: '/api/tables/bench/rows?expand=customer', headers: auth },
  linkfirst: { path: '/api/tables/bench/rows', headers: auth },
  paid: { path: paid, headers: auth },
  get: { path: () => `/api/tables/bench/rows/${ds.rowId(someRow())}`, headers: auth },
  export: { path: '/api/tables/bench/rows-export?format=csv&encoding=utf8&newline=lf', headers: auth },
};
const floorRequests = {
  create: { ...serviceRequests.create, path: '/rows' },
  patch: { ...serviceRequests.patch, path: () => `/rows/${ds.rowId(someRow())}` },
  first: { path: '/first' },
  paid: { path: '/paid' },
  get: { path: () => `/rows/${ds.rowId(someRow())}` },
};
const requests: Record<string, Parameters<typeof load>[1]> = FLOOR ? floorRequests : serviceRequests;
/** When the measured load began (ms after the profiled process was started), and the requests it answered. */
let measuredFrom = 0;
let measuredTo = Number.POSITIVE_INFINITY;
let answered = 1;
if (WORKLOAD === 'import') {
  const rows = Number(process.argv[3] ?? 200_000);
  await createBenchTable(service.url, 'imported');
  const started = Date.now();
  const answer = await csvOfDataset(ds).postCsv(`${service.url}/api/tables/imported/rows-import?format=csv&encoding=utf8`, rows, auth);
  console.log(`import on ${postgres ? 'PostgreSQL' : 'SQLite'}: ${answer.created} rows, ${Math.round(rows / ((Date.now() - started) / 1000))} rows/s`);
} else {
  if (!(WORKLOAD in requests)) throw new Error(`unknown workload ${WORKLOAD}: use import, ${Object.keys(requests).join(', ')}`);
  const request = requests[WORKLOAD];
  await load(service.url, request, 1);
  const pid = service.child.pid as number;
  measuredFrom = performance.now() - profiledFrom;
  const cpu0 = cpuMs(pid).total;
  const db0 = await databaseActivity();
  const result = await load(service.url, request, SECONDS);
  measuredTo = performance.now() - profiledFrom;
  const cpu = cpuMs(pid).total - cpu0;
  const db1 = await databaseActivity();
  answered = result.rps * SECONDS;
  console.log(`${WORKLOAD} on ${FLOOR ? 'the floor, ' : ''}${postgres ? 'PostgreSQL' : 'SQLite'}: ${result.rps.toFixed(0)} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms`);
  console.log(`  per request: server process CPU ${((cpu * 1000) / answered).toFixed(0)} µs`);
  if (db0 && db1) {
    const per = (k: keyof typeof db0, scale = 1) => ((db1[k] - db0[k]) * scale) / answered;
    console.log(
      `  per request, PostgreSQL: CPU ${per('cpuMs', 1000).toFixed(0)} µs, transactions ${per('xacts').toFixed(2)}, rows inserted ${per('inserted').toFixed(2)}, updated ${per('updated').toFixed(2)}, WAL records ${per('walRecords').toFixed(1)}, WAL bytes ${per('walBytes').toFixed(0)}`,
    );
  }
}
await service.stop();
await postgres?.stop();
const file = fs.readdirSync(profiles).find((f) => f.endsWith('.cpuprofile'));
if (!file) throw new Error('no profile written');
summarise(JSON.parse(fs.readFileSync(path.join(profiles, file), 'utf8')) as Profile, measuredFrom, measuredTo, answered);
if (process.env.PROFILE_KEEP) {
  fs.copyFileSync(path.join(profiles, file), process.env.PROFILE_KEEP);
  console.log(`\nthe profile kept in ${process.env.PROFILE_KEEP} (measured from ${measuredFrom.toFixed(0)} to ${measuredTo.toFixed(0)} ms, ${answered.toFixed(0)} requests)`);
}
fs.rmSync(dir, { recursive: true, force: true });
