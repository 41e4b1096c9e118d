// Rows benchmark (issue: rows CRUD and listing): the service against a minimal Fastify + raw SQL
// floor on the same 200,000-row table, in one run. SQLite by default; BENCH_DATABASE=postgres runs
// both on a PostgreSQL server the benchmark starts (the machine's binaries, as the tests do).
//   node --import tsx bench/rows.ts [rows=200000] [seconds=5]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Load, type LoadRequest, load } from './support/load.ts';
import { api, createBenchTable, dataset, fillPostgres, fillSqlite } from './support/dataset.ts';
// @ts-expect-error: a plain JavaScript module of the test setup, without type declarations
import { startPostgres } from '../test/support/postgres-server.mjs';
import { BENCH_KEY, startFloor, startService } from './support/processes.ts';

const N = Number(process.argv[2] ?? 200_000);
const SECONDS = Number(process.argv[3] ?? 5);
const DEEP = Math.floor(Math.min(150_000, N * 0.75) / 200) * 200;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-bench-'));
const postgres = process.env.BENCH_DATABASE === 'postgres' ? await startPostgres() : null;
if (process.env.BENCH_DATABASE === 'postgres' && !postgres) throw new Error('no PostgreSQL binaries found');
const db = postgres ? postgres.url : path.join(dir, 'rowhouse.db');
const env = { ROWHOUSE_DATA_DIR: dir, ...(postgres ? { DATABASE_URL: postgres.url } : {}) };
const ds = await dataset();

let service = await startService(env);
const table = await createBenchTable(service.url);
const keys = await api(service.url, 'GET', '/api/api-keys');
const ownerId = keys.data[0].memberId as string;
await service.stop();
const t0 = Date.now();
await (postgres ? fillPostgres(db, table, N, ownerId) : fillSqlite(db, table, N, ownerId));
console.log(`loaded ${N} rows into ${postgres ? 'PostgreSQL' : 'SQLite'} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

service = await startService(env);
const columns = Object.fromEntries(ds.FIELDS.map((f) => [f.code, table.column(f.code)]));
const floor = await startFloor(db, [{ physical: table.physical, columns }]);

// The cursor of the page starting at row DEEP, reached by walking nextUrl.
let url = `/api/tables/bench/rows?pageSize=200`;
for (let seen = 0; seen < DEEP; seen += 200) {
  const page = await api(service.url, 'GET', url);
  url = new URL(page.nextUrl).pathname + new URL(page.nextUrl).search;
}
const deepPath = url.replace('pageSize=200', 'pageSize=50');
const before = new Date(Date.UTC(2025, 0, 1) + (DEEP - 1) * 1000).toISOString();
const floorDeep = `/after?c=${encodeURIComponent(before)}&id=${ds.rowId(DEEP - 1)}`;

const q = (o: unknown) => encodeURIComponent(JSON.stringify(o));
const paidPath =
  `/api/tables/bench/rows?filter=${q({ values: { status: { _eq: 'paid' }, amount: { _gt: 5000 } } })}` +
  `&sort=${q([{ amount: { direction: 'desc', nulls: 'nullsLast' } }])}`;
let n = 0;
const someId = () => ds.rowId((n = (n * 7919 + 13) % N));
const createBody = () => JSON.stringify({ values: { title: `bench ${n++}`, amount: (n % 10000) + 0.5 } });
const patchBody = () => JSON.stringify({ values: { amount: (n++ % 10000) + 0.25 } });
const auth = { 'x-api-key': BENCH_KEY };

const workloads: [string, LoadRequest, LoadRequest][] = [
  ['first page', { path: '/api/tables/bench/rows', headers: auth }, { path: '/first' }],
  ['paid, amount > 5000, amount desc', { path: paidPath, headers: auth }, { path: '/paid' }],
  [`page at row ${DEEP} by cursor`, { path: deepPath, headers: auth }, { path: floorDeep }],
  ['get by id', { path: () => `/api/tables/bench/rows/${someId()}`, headers: auth }, { path: () => `/rows/${someId()}` }],
  ['create', { method: 'POST', path: '/api/tables/bench/rows', body: createBody, headers: auth }, { method: 'POST', path: '/rows', body: createBody }],
  ['patch', { method: 'PATCH', path: () => `/api/tables/bench/rows/${someId()}`, body: patchBody, headers: auth }, { method: 'PATCH', path: () => `/rows/${someId()}`, body: patchBody }],
];

const results: Record<string, { service: Load; floor: Load }> = {};
for (const [name, s, f] of workloads) {
  await load(service.url, s, 1); // warm-up
  await load(floor.url, f, 1);
  const serviceLoad = await load(service.url, s, SECONDS);
  const floorLoad = await load(floor.url, f, SECONDS);
  results[name] = { service: serviceLoad, floor: floorLoad };
  if (serviceLoad.non2xx > 0 || serviceLoad.errors > 0) console.log(`  ! ${name}: ${serviceLoad.non2xx} non-2xx, ${serviceLoad.errors} errors`);
}
await service.stop();
await floor.stop();
await postgres?.stop();
fs.rmSync(dir, { recursive: true, force: true });

const fmt = (x: number, d = 0) => x.toFixed(d).padStart(8);
console.log(`\n${N} rows on ${postgres ? 'PostgreSQL' : 'SQLite'}, ${SECONDS} s per workload, 10 connections; latency in ms\n`);
console.log(`${'workload'.padEnd(36)} ${'svc req/s'.padStart(9)} ${'p50'.padStart(8)} ${'p99'.padStart(8)} ${'floor r/s'.padStart(9)} ${'p50'.padStart(8)} ${'p99'.padStart(8)} ${'ratio'.padStart(8)}`);
for (const [name, { service: s, floor: f }] of Object.entries(results)) {
  console.log(`${name.padEnd(36)} ${fmt(s.rps).padStart(9)} ${fmt(s.p50, 1)} ${fmt(s.p99, 1)} ${fmt(f.rps).padStart(9)} ${fmt(f.p50, 1)} ${fmt(f.p99, 1)} ${fmt(s.rps / f.rps, 2)}`);
}

const r = (name: string) => results[name];
const firstName = 'first page';
const deepName = `page at row ${DEEP} by cursor`;
const budgets: [string, boolean, string][] = [
  [
    'deep page mean latency within 1.5x of the first page',
    r(deepName).service.mean <= 1.5 * r(firstName).service.mean,
    `${r(deepName).service.mean.toFixed(2)} ms vs ${r(firstName).service.mean.toFixed(2)} ms`,
  ],
  ...[firstName, 'paid, amount > 5000, amount desc', deepName, 'get by id'].map((name): [string, boolean, string] => [
    `${name}: at least 50% of the floor's throughput`,
    r(name).service.rps >= 0.5 * r(name).floor.rps,
    `${((100 * r(name).service.rps) / r(name).floor.rps).toFixed(0)}%`,
  ]),
];
console.log('\nbudgets:');
for (const [what, ok, figure] of budgets) console.log(`  ${ok ? 'PASS' : 'FAIL'}  ${what} (${figure})`);
process.exit(budgets.every(([, ok]) => ok) ? 0 : 1);
