// Bulk and batch benchmark: the service against a floor of raw inserts in one transaction over
// HTTP, on the same database (the floor writes into tables of its own, made by the same API, so
// with the same indexes). SQLite by default; BENCH_DATABASE=postgres runs both on a PostgreSQL
// server the benchmark starts. Writes must reach 0.8 of the floor (issue 27). Beside the rates, the
// CPU time per row (per operation) of each server process and, on PostgreSQL, of the database's
// connections while it was loaded: on a shared machine, the figures other load moves least.
//   node --import tsx bench/bulk.ts [bulks=20] [batches=10]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { api, createBenchTable, dataset } from './support/dataset.ts';
import pg from 'pg';
import { BENCH_KEY, type Proc, cpuMs, databaseCpuMs, startFloor, startService } from './support/processes.ts';
// @ts-expect-error: a plain JavaScript module of the test setup, without type declarations
import { startPostgres } from '../test/support/postgres-server.mjs';

const BULKS = Number(process.argv[2] ?? 20);
const BATCHES = Number(process.argv[3] ?? 10);
const SIZE = 1000;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-bench-'));
const postgres = process.env.BENCH_DATABASE === 'postgres' ? await startPostgres() : null;
if (process.env.BENCH_DATABASE === 'postgres' && !postgres) throw new Error('no PostgreSQL binaries found');
const ds = await dataset();
const service = await startService({ ROWHOUSE_DATA_DIR: dir, ...(postgres ? { DATABASE_URL: postgres.url } : {}) });
const [a, b, fa, fb] = [await createBenchTable(service.url, 'a'), await createBenchTable(service.url, 'b'), await createBenchTable(service.url, 'fa'), await createBenchTable(service.url, 'fb')];
const columnsOf = (t: typeof a) => Object.fromEntries(ds.FIELDS.map((f) => [f.code, t.column(f.code)]));
const floor = await startFloor(postgres ? postgres.url : path.join(dir, 'rowhouse.db'), [{ physical: fa.physical, columns: columnsOf(fa) }, { physical: fb.physical, columns: columnsOf(fb) }]);

const source = [...ds.rows(Math.max(BULKS * SIZE, BATCHES * 700))];

async function post(target: Proc, url: string, body: unknown, auth: boolean): Promise<void> {
  const res = await fetch(target.url + url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(auth ? { 'x-api-key': BENCH_KEY } : {}) },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${url} → ${res.status}: ${(await res.text()).slice(0, 300)}`);
  await res.arrayBuffer();
}

const database = postgres ? new pg.Client({ connectionString: postgres.url }) : null;
await database?.connect();

interface Timed {
  /** Rows (or operations) per second. */
  rate: number;
  /** CPU µs per row (operation) of the server process, and of the database's connections (0 on SQLite). */
  cpuUs: number;
  dbUs: number;
}

/** Sends the bodies to `target` one after another: its rate and CPU per row (or operation). */
async function timed(target: Proc, bodies: unknown[], send: (body: unknown) => Promise<void>): Promise<Timed> {
  const pid = target.child.pid as number;
  const [cpu0, db0] = [cpuMs(pid).total, database ? await databaseCpuMs(database) : 0];
  const t0 = process.hrtime.bigint();
  for (const body of bodies) await send(body);
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const n = bodies.length * SIZE;
  const dbUs = database ? (((await databaseCpuMs(database)) - db0) * 1000) / n : 0;
  return { rate: n / seconds, cpuUs: ((cpuMs(pid).total - cpu0) * 1000) / n, dbUs };
}

const bulkBodies = (round: string) =>
  Array.from({ length: BULKS }, (_, k) => ({
    data: source.slice(k * SIZE, (k + 1) * SIZE).map((r) => ({ id: `${round}-${r.id}`, values: r.values })),
  }));

/** 1000 mixed operations: 400 creates in the first table, 300 in the second, 200 updates and 100 deletes of rows created earlier in the batch. */
function batchBody(round: string, k: number, first: string | number, second: string | number) {
  const ops: Record<string, unknown>[] = [];
  const rowsOf = source.slice(k * 700, k * 700 + 700);
  rowsOf.forEach((r, i) => ops.push({ type: 'create', tableId: i < 400 ? first : second, id: `${round}-${k}-${r.id}`, values: r.values }));
  for (let i = 0; i < 200; i++) ops.push({ type: 'update', tableId: first, id: `${round}-${k}-${rowsOf[i].id}`, values: { amount: i + 0.5 } });
  for (let i = 0; i < 100; i++) ops.push({ type: 'delete', tableId: second, id: `${round}-${k}-${rowsOf[400 + i].id}` });
  return { operations: ops };
}

const results: Record<string, { service: Timed[]; floor: Timed[] }> = { bulk: { service: [], floor: [] }, batch: { service: [], floor: [] } };
for (const round of ['w', 'r1', 'r2']) {
  const s1 = await timed(service, bulkBodies(`s${round}`), (body) => post(service, '/api/tables/a/rows-bulk', body, true));
  const f1 = await timed(floor, bulkBodies(`f${round}`), (body) => post(floor, '/bulk', body, false));
  const batches = Array.from({ length: BATCHES }, (_, k) => k);
  const s2 = await timed(service, batches.map((k) => batchBody(`s${round}`, k, 'a', 'b')), (body) => post(service, '/api/rows-batch', body, true));
  const f2 = await timed(floor, batches.map((k) => batchBody(`f${round}`, k, 0, 1)), (body) => post(floor, '/batch', body, false));
  if (round === 'w') continue; // warm-up
  results.bulk.service.push(s1);
  results.bulk.floor.push(f1);
  results.batch.service.push(s2);
  results.batch.floor.push(f2);
}
const count = await api(service.url, 'GET', '/api/tables/a/rows?pageSize=1');
if (!count.data.length) throw new Error('no rows were written');
await database?.end();
await service.stop();
await floor.stop();
await postgres?.stop();
fs.rmSync(dir, { recursive: true, force: true });

const best = (xs: Timed[]) => Math.max(...xs.map((x) => x.rate));
const cpu = (xs: Timed[]) => xs.map((x) => `${x.cpuUs.toFixed(0)}${database ? `+${x.dbUs.toFixed(0)}` : ''}`).join(', ');
console.log(`\n${postgres ? 'PostgreSQL' : 'SQLite'}: ${BULKS} sequential bulk creates of ${SIZE} rows; ${BATCHES} batches of ${SIZE} mixed operations over two tables (best of 2 rounds after a warm-up)\n`);
console.log(`${'workload'.padEnd(28)} ${'service/s'.padStart(10)} ${'floor/s'.padStart(10)} ${'ratio'.padStart(7)}   CPU µs per row, server${database ? ' + PostgreSQL' : ''} (rounds): service | floor`);
const budgets: [string, boolean][] = [];
for (const [name, r] of Object.entries(results)) {
  const ratio = best(r.service) / best(r.floor);
  console.log(`${(name === 'bulk' ? 'bulk create (rows/s)' : 'batch (operations/s)').padEnd(28)} ${best(r.service).toFixed(0).padStart(10)} ${best(r.floor).toFixed(0).padStart(10)} ${ratio.toFixed(2).padStart(7)}   ${cpu(r.service)} | ${cpu(r.floor)}`);
  budgets.push([`${name}: at least 80% of the floor (${(ratio * 100).toFixed(0)}%)`, ratio >= 0.8]);
}
console.log('\nbudgets:');
for (const [what, ok] of budgets) console.log(`  ${ok ? 'PASS' : 'FAIL'}  ${what}`);
process.exit(budgets.every(([, ok]) => ok) ? 0 : 1);
