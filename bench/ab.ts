// Two builds side by side (issue 27): the sources of a git commit (`before`) against the working
// tree (`after`), each bundled as the product's build is (scripts/bundle-options.mjs), both served
// at once on the same database at the default log level (info, an access line per request, read
// from their standard output here and dropped, as a collector that keeps up would), and loaded in
// turn: BENCH_ROUNDS paired rounds of `seconds` a side, alternating which goes first. For each
// workload: each side's rate and server CPU time per answered request (µs), which other load on
// the machine barely moves, and the median of the rounds' ratios after : before. On a shared
// machine compare only within a run.
//   node --import tsx bench/ab.ts <commit> [rows=20000] [seconds=5]
//   BENCH_ONLY=get,first (default: get,first,paid,amount; also patch: `{amount}` patches of the loaded
//   full dataset rows, as bench/rows.ts sends them); BENCH_DATABASE=postgres; BENCH_ROUNDS (5);
//   BENCH_LOG_LEVEL=warn serves both sides without access lines. `create` and `idem`: single creates of full
//   dataset rows, `idem` with a fresh Idempotency-Key each (issue 29). `bulk`: 1,000-row bulk creates of
//   full dataset rows (ids made by the service), from 2 connections. On PostgreSQL each side's
//   figures add the database's CPU per request (all its processes', while that side alone is loaded).
//   `export`: whole-table CSV downloads (UTF-8, LF, as bench/rows.ts asks for them) from one
//   connection, each round's figure the server's CPU per export (µs).
// Links (issue 28): the workloads `orders` (the first page of `rows` orders linked to rows/18
// customers, each customer's inverse `orders` field holding about 18 ids, as bench/links.ts at
// 200,000 and 10,000), `expand` (the same page with expand=customer), and bulk creates of 1,000 such
// orders from one connection: `pair` (linking a customer, with its inverse), `oneway` (a link
// without inverse) and `nolink` (the same orders without the link). Bulk workloads are not compared
// for bytes (their answers hold the time of writing).
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
// @ts-expect-error: a plain JavaScript module of the build, without type declarations
import { serviceBundleOptions } from '../scripts/bundle-options.mjs';
import { type Load, type LoadRequest, load } from './support/load.ts';
import { median, pairedRounds } from './support/rounds.ts';
import { api, createBenchTable, dataset, loadThroughApi } from './support/dataset.ts';
import pg from 'pg';
import { BENCH_KEY, ROOT, type Proc, benchDatabase, cpuMs, databaseCpuMs, freePort, startProcess } from './support/processes.ts';
import { scatteredRows } from './support/scattered.ts';

const COMMIT = process.argv[2];
if (!COMMIT) throw new Error('usage: node --import tsx bench/ab.ts <commit> [rows] [seconds]');
const N = Number(process.argv[3] ?? 20_000);
const SECONDS = Number(process.argv[4] ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const ONLY = (process.env.BENCH_ONLY ?? 'get,first,paid,amount').split(',');

const { dir, postgres, env } = await benchDatabase('ab');
const ds = await dataset();

// ---- the two bundles, in .bench-data/ under the project (where their packages resolve) ----

fs.mkdirSync(path.join(ROOT, '.bench-data'), { recursive: true });
const work = fs.mkdtempSync(path.join(ROOT, '.bench-data', 'ab-'));
const beforeRoot = path.join(work, 'before-src');
fs.mkdirSync(beforeRoot, { recursive: true });
execFileSync('sh', ['-c', `git archive ${JSON.stringify(COMMIT)} src package.json | tar -x -C ${JSON.stringify(beforeRoot)}`], { cwd: ROOT });
const commit = execFileSync('git', ['rev-parse', '--short', COMMIT], { cwd: ROOT, encoding: 'utf8' }).trim();
async function bundle(name: string, root: string): Promise<string> {
  const out = path.join(work, name);
  await build({ ...serviceBundleOptions(root, path.join(out, 'cli.js')), logLevel: 'error' });
  fs.writeFileSync(path.join(out, 'package.json'), JSON.stringify({ type: 'commonjs' }));
  fs.writeFileSync(path.join(out, 'serve.js'), "require('./cli.js').main(['serve']);\n");
  return path.join(out, 'serve.js');
}
const scripts = { before: await bundle('before', beforeRoot), after: await bundle('after', ROOT) };
type Side = keyof typeof scripts;
// BENCH_AFTER_NODE_ARGS: node's options for the `after` side alone (space-separated), to weigh one
// against the same build: `bench/ab.ts HEAD` with BENCH_AFTER_NODE_ARGS=--max-semi-space-size=32.
const afterNodeArgs = (process.env.BENCH_AFTER_NODE_ARGS ?? '').split(' ').filter(Boolean);

async function serve(side: Side): Promise<Proc> {
  const port = await freePort();
  const level: Record<string, string> = process.env.BENCH_LOG_LEVEL ? { ROWHOUSE_LOG_LEVEL: process.env.BENCH_LOG_LEVEL } : {};
  const proc = await startProcess([...(side === 'after' ? afterNodeArgs : []), scripts[side]], { ...env, PORT: String(port), ROWHOUSE_API_KEY: BENCH_KEY, ...level }, port, '/healthz');
  // startProcess keeps the last 20 KB of the output, copying it at each chunk: read and dropped instead.
  proc.child.stdout?.removeAllListeners('data');
  proc.child.stdout?.on('data', () => {});
  return proc;
}

// ---- the data, loaded through the `before` side; then both sides on it ----

let loader = await serve('before');
await createBenchTable(loader.url);
await loadThroughApi(loader.url, 'bench', N);
// The linked tables, where a links workload is asked for.
const LINKS = ['orders', 'expand', 'pair', 'oneway', 'nolink'];
const CUSTOMERS = Math.max(2, Math.round(N / 18));
const customerId = (i: number) => `cust-${i % CUSTOMERS}`;
if (ONLY.some((w) => LINKS.includes(w))) {
  const pairs = { table: 'customers', inverse: { code: 'orders' } };
  await api(loader.url, 'POST', '/api/tables', { code: 'customers', name: 'Customers', fields: [{ code: 'name', type: 'text' }, { code: 'country', type: 'text' }] });
  await createBenchTable(loader.url, 'orders', [{ code: 'customer', type: 'link', options: pairs }]);
  await createBenchTable(loader.url, 'oneway', [{ code: 'customer', type: 'link', options: { table: 'customers' } }]);
  for (let k = 0; k < CUSTOMERS; k += 1000) {
    const data = Array.from({ length: Math.min(1000, CUSTOMERS - k) }, (_, j) => ({ id: customerId(k + j), values: { name: `Customer ${k + j}`, country: 'JP' } }));
    await api(loader.url, 'POST', '/api/tables/customers/rows-bulk', { data });
  }
  await loadThroughApi(loader.url, 'orders', N, (i) => ({ customer: customerId((i * 7919) % CUSTOMERS) }));
}
await loader.stop();
const servers: Record<Side, Proc> = { before: await serve('before'), after: await serve('after') };

const someRow = scatteredRows(N);
let made = 0;
let p = 0;
const q = (o: unknown) => encodeURIComponent(JSON.stringify(o));
const auth = { 'x-api-key': BENCH_KEY };
const workloads: Record<string, LoadRequest> = {
  get: { path: () => `/api/tables/bench/rows/${ds.rowId(someRow())}`, headers: auth },
  first: { path: '/api/tables/bench/rows', headers: auth },
  paid: {
    path:
      `/api/tables/bench/rows?filter=${q({ values: { status: { _eq: 'paid' }, amount: { _gt: 5000 } } })}` +
      `&sort=${q([{ amount: { direction: 'desc', nulls: 'nullsLast' } }, { id: { direction: 'desc', nulls: 'nullsLast' } }])}`,
    headers: auth,
  },
  amount: { path: `/api/tables/bench/rows?sort=${q([{ amount: { direction: 'desc', nulls: 'nullsLast' } }, { id: { direction: 'desc', nulls: 'nullsLast' } }])}`, headers: auth },
  orders: { path: '/api/tables/orders/rows', headers: auth },
  expand: { path: '/api/tables/orders/rows?expand=customer', headers: auth },
  pair: bulkOf('orders', true),
  oneway: bulkOf('oneway', true),
  nolink: bulkOf('orders', false),
  patch: {
    method: 'PATCH',
    path: () => `/api/tables/bench/rows/${ds.rowId(someRow())}`,
    body: () => JSON.stringify({ values: { amount: (p++ % 10000) + 0.25 } }),
    headers: auth,
  },
  bulk: { method: 'POST', path: '/api/tables/bench/rows-bulk', body: () => bulkBody, headers: auth },
  export: { path: '/api/tables/bench/rows-export?format=csv&encoding=utf8&newline=lf', headers: auth },
  create: createOf(false),
  idem: createOf(true),
};
/** Single creates of full dataset rows (ids made by the service), with a fresh Idempotency-Key each (`idem`) or none (`create`). */
function createOf(keyed: boolean): LoadRequest {
  const bodies = [...ds.rows(1000, 5)].map((r) => JSON.stringify({ values: r.values }));
  let i = 0;
  const request: LoadRequest = { method: 'POST', path: '/api/tables/bench/rows', body: () => bodies[i++ % bodies.length], headers: auth };
  return keyed ? { ...request, moreHeaders: () => ({ 'idempotency-key': randomUUID() }) } : request;
}
const bulkBody = JSON.stringify({ data: [...ds.rows(1000, 7)].map((r) => ({ values: r.values })) });
/** Bulks answer rows of their own (new ids and times): not compared for bytes, and loaded from fewer connections. */
const bulks = new Set(['pair', 'oneway', 'nolink', 'bulk', 'create', 'idem']);
/** Patches answer what they wrote (their times differ): both sides' answers are compared but for those. */
const patches = new Set(['patch']);
/** Single creates: loaded from 10 connections, as reads are (not compared for bytes: new ids). */
const creates = new Set(['create', 'idem']);
const withoutTimes = (text: string) => text.replace(/"updatedAt":"[^"]*"/g, '"updatedAt":…');

/** Bulk creates of 1,000 new orders (ids never repeated across both sides), linking a customer each or not. */
function bulkOf(table: string, linked: boolean): LoadRequest {
  const source = [...ds.rows(1000, 11)].map((r) => r.values);
  return {
    method: 'POST',
    path: `/api/tables/${table}/rows-bulk`,
    headers: auth,
    body: () =>
      JSON.stringify({
        data: source.map((values) => {
          const i = made++;
          return { id: `bulk-${i}`, values: linked ? { ...values, customer: customerId(i * 104729) } : values };
        }),
      }),
  };
}

// Both sides answer the same bytes (the change must not move any).
for (const name of ONLY) {
  const request = workloads[name];
  if (request && bulks.has(name)) continue;
  if (!request) throw new Error(`unknown workload ${name}: use ${Object.keys(workloads).join(', ')}`);
  const path1 = typeof request.path === 'function' ? request.path() : request.path;
  const body = request.body?.();
  const init = { method: request.method ?? 'GET', headers: body === undefined ? auth : { ...auth, 'content-type': 'application/json' }, body };
  // (nextUrl names each server's own address.) One after the other: a write's answer is the row as written.
  const answers: string[] = [];
  for (const s of Object.values(servers)) answers.push((await (await fetch(s.url + path1, init)).text()).replaceAll(s.url, ''));
  const [a, b] = patches.has(name) ? answers.map(withoutTimes) : answers;
  if (a !== b) throw new Error(`${name}: the two builds answer differently:\n${a.slice(0, 300)}\n${b.slice(0, 300)}`);
}

const database = postgres ? new pg.Client({ connectionString: postgres.url }) : null;
await database?.connect();
type Measured = Load & { cpuUs: number; dbUs: number };
async function measured(side: Side, request: LoadRequest, connections: number): Promise<Measured> {
  const pid = servers[side].child.pid as number;
  const before = cpuMs(pid).total;
  const dbBefore = database ? await databaseCpuMs(database) : 0;
  const result = await load(servers[side].url, request, SECONDS, connections);
  const answered = Math.max(1, result.rps * SECONDS);
  const dbUs = database ? ((await databaseCpuMs(database)) - dbBefore) * 1000 / answered : 0;
  return { ...result, cpuUs: ((cpuMs(pid).total - before) * 1000) / answered, dbUs };
}

console.log(`${N} rows on ${postgres ? 'PostgreSQL' : 'SQLite'}, log level ${process.env.BENCH_LOG_LEVEL ?? 'info'}: ${commit} (before) against the working tree (after), ${ROUNDS} paired rounds of ${SECONDS} s a side, 10 connections (bulks: 1, bulk: 2)\n`);
console.log(`${'workload'.padEnd(10)} ${'before r/s'.padStart(10)} ${'after r/s'.padStart(10)} ${'after/before'.padStart(12)}   CPU µs/request before : after (median; rounds)`);
for (const name of ONLY) {
  const request = workloads[name];
  const connections = name === 'bulk' ? 2 : (bulks.has(name) && !creates.has(name)) || name === 'export' ? 1 : 10;
  await measured('before', request, connections); // warm-up, both
  await measured('after', request, connections);
  const runs = await pairedRounds(ROUNDS, ['before', 'after'] as const, (side) => measured(side, request, connections));
  const ratios = runs.after.map((m, i) => m.rps / runs.before[i].rps);
  const med = (xs: Measured[], f: (m: Measured) => number) => median(xs.map(f));
  const failures = [...runs.before, ...runs.after].reduce((n, m) => n + m.errors + m.non2xx, 0);
  console.log(
    `${name.padEnd(10)} ${med(runs.before, (m) => m.rps).toFixed(0).padStart(10)} ${med(runs.after, (m) => m.rps).toFixed(0).padStart(10)} ${median(ratios).toFixed(3).padStart(12)}   ` +
      `${med(runs.before, (m) => m.cpuUs).toFixed(0)} : ${med(runs.after, (m) => m.cpuUs).toFixed(0)}   ` +
      `(ratios ${ratios.map((r) => r.toFixed(2)).join(', ')}; CPU ${runs.before.map((m, i) => `${m.cpuUs.toFixed(0)}:${runs.after[i].cpuUs.toFixed(0)}`).join(', ')})` +
      (database ? `; PostgreSQL's CPU µs/request ${med(runs.before, (m) => m.dbUs).toFixed(0)} : ${med(runs.after, (m) => m.dbUs).toFixed(0)} (${runs.before.map((m, i) => `${m.dbUs.toFixed(0)}:${runs.after[i].dbUs.toFixed(0)}`).join(', ')})` : '') +
      (failures > 0 ? `  ! ${failures} errors or non-2xx` : ''),
  );
}
await database?.end();
for (const s of Object.values(servers)) await s.stop();
await postgres?.stop();
fs.rmSync(dir, { recursive: true, force: true });
fs.rmSync(work, { recursive: true, force: true });
