// Change events benchmark, in one run, of `rowhouse serve` (the build: run `npm run build` first):
//
// (a) what the change log costs writes: 1,000-row bulk creates (rows-bulk) of the dataset, one
//     after another, into the same service with the log on (the default) and with
//     ROWHOUSE_CHANGE_LOG=off, each on a database of its own, both running, rounds alternating which
//     goes first. Goal: with the log, at least 0.8 of the rows/s without (the log costs at most 20%),
//     taken as the median of the rounds' ratios: each round pairs the two sides at the same table
//     size, back to back. (Best against best, over rounds of 20,000 rows, a second each, moved from
//     0.77 to 0.90 between runs of one build: a checkpoint or the planner statistics' worker landing
//     in one side's second decided it.) The service's CPU time per row is shown beside it (other load
//     on the machine moves it less).
// (b) end-to-end webhook delivery: an enabled flow on a fresh table of the logged service, to a
//     receiver in this process that answers 200 at once; EVENTS rows written by 1,000-row bulk
//     creates, timed from the first write sent to the last event's arrival. The delay of each event
//     (arrival less the change's occurredAt) is shown too. The receiver shares the machine's two
//     cores with the service and, on PostgreSQL, the database server.
// (c) the feed's read rate: the whole changes feed of (a)'s table, limit=1000, following nextCursor.
//
// SQLite by default; BENCH_DATABASE=postgres runs the services on a PostgreSQL server the benchmark
// starts (a database for each).
//   npm run build && node --import tsx bench/changes.ts [bulks=50] [rounds=5] [events=20000]
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { median } from './support/rounds.ts';
import { api, createBenchTable, dataset } from './support/dataset.ts';
import { BENCH_KEY, type Proc, cpuMs, startService } from './support/processes.ts';
// @ts-expect-error: a plain JavaScript module of the test setup, without type declarations
import { startPostgres } from '../test/support/postgres-server.mjs';

const BULKS = Number(process.argv[2] ?? 50);
const ROUNDS = Number(process.argv[3] ?? 5);
const EVENTS = Number(process.argv[4] ?? 20_000);
if (![BULKS, ROUNDS, EVENTS].every((n) => Number.isInteger(n) && n >= 1)) throw new Error('usage: bench/changes.ts [bulks=50] [rounds=5] [events=20000]');
const SIZE = 1000;
const RATIO_GOAL = 0.8;

const ds = await dataset();
const source = [...ds.rows(Math.max(BULKS, Math.ceil(EVENTS / SIZE)) * SIZE)];
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-bench-changes-'));
const postgres = process.env.BENCH_DATABASE === 'postgres' ? await startPostgres() : null;
if (process.env.BENCH_DATABASE === 'postgres' && !postgres) throw new Error('no PostgreSQL binaries found');

/** A database of its own for a service: a SQLite file in its directory, or a new PostgreSQL database. */
async function databaseFor(name: string): Promise<Record<string, string>> {
  const dataDir = path.join(dir, name);
  fs.mkdirSync(dataDir);
  if (!postgres) return { ROWHOUSE_DATA_DIR: dataDir };
  const client = new pg.Client({ connectionString: postgres.url });
  await client.connect();
  await client.query(`create database ${name}`);
  await client.end();
  const url = new URL(postgres.url);
  url.pathname = `/${name}`;
  return { ROWHOUSE_DATA_DIR: dataDir, DATABASE_URL: url.toString() };
}

async function post(target: Proc, url: string, body: unknown): Promise<void> {
  const res = await fetch(target.url + url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': BENCH_KEY },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${url} → ${res.status}: ${(await res.text()).slice(0, 300)}`);
  await res.arrayBuffer();
}

/** `count` bulk creates of 1,000 dataset rows (ids prefixed), one after another. */
const bulkBodies = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, k) => ({
    data: source.slice(k * SIZE, (k + 1) * SIZE).map((r) => ({ id: `${prefix}-${r.id}`, values: r.values })),
  }));

interface Run {
  rowsPerSecond: number;
  cpuUsPerRow: number;
  /** PostgreSQL: the CPU time per row of the server processes serving the side's database (its connections); NaN on SQLite. */
  databaseCpuUsPerRow: number;
}

/** PostgreSQL: the CPU time so far, in ms, of the server processes connected to the database. */
async function databaseCpuMs(database: string): Promise<number> {
  if (!postgres) return NaN;
  const client = new pg.Client({ connectionString: postgres.url });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>('select pid from pg_stat_activity where datname = $1', [database]);
    let total = 0;
    for (const { pid } of rows) {
      try {
        total += cpuMs(pid).total;
      } catch {
        // the connection ended meanwhile
      }
    }
    return total;
  } finally {
    await client.end();
  }
}

async function bulkRun(service: Proc, database: string, table: string, prefix: string): Promise<Run> {
  const bodies = bulkBodies(prefix, BULKS);
  const pid = service.child.pid as number;
  const db0 = await databaseCpuMs(database);
  const cpu0 = cpuMs(pid).total;
  const t0 = process.hrtime.bigint();
  for (const body of bodies) await post(service, `/api/tables/${table}/rows-bulk`, body);
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = cpuMs(pid).total - cpu0;
  const perRow = (ms: number) => (ms * 1000) / (BULKS * SIZE);
  return { rowsPerSecond: (BULKS * SIZE) / seconds, cpuUsPerRow: perRow(cpu), databaseCpuUsPerRow: perRow((await databaseCpuMs(database)) - db0) };
}

const logged = await startService({ ...(await databaseFor('bench_on')), ROWHOUSE_CHANGE_LOG: 'on', ROWHOUSE_WEBHOOK_ALLOW_PRIVATE: 'true' });
const unlogged = await startService({ ...(await databaseFor('bench_off')), ROWHOUSE_CHANGE_LOG: 'off' });
const receiver = { server: null as http.Server | null };
const checks: string[] = [];
const runs = { on: [] as Run[], off: [] as Run[] };
const delivery = { seconds: 0, writeSeconds: 0, delays: [] as number[], duplicates: 0 };
const feedReads: number[] = [];
let feedLength = 0;
try {
  // (a) bulk creates, log on against log off.
  for (const service of [logged, unlogged]) await createBenchTable(service.url, 'a');
  for (let round = 0; round <= ROUNDS; round++) {
    const order: ['on' | 'off', Proc][] = round % 2 === 0 ? [['on', logged], ['off', unlogged]] : [['off', unlogged], ['on', logged]];
    for (const [side, service] of order) {
      const run = await bulkRun(service, `bench_${side}`, 'a', `r${round}`);
      if (round > 0) runs[side].push(run); // round 0 warms up
    }
    if (round > 0) console.log(`round ${round}: log on ${runs.on.at(-1)?.rowsPerSecond.toFixed(0)} rows/s, off ${runs.off.at(-1)?.rowsPerSecond.toFixed(0)} rows/s`);
  }
  const first = await api(logged.url, 'GET', '/api/tables/a/changes?limit=1');
  if (first.data[0]?.sequence !== 1) throw new Error('the logged service recorded no change');
  const off = await fetch(`${unlogged.url}/api/tables/a/changes`, { headers: { 'x-api-key': BENCH_KEY } });
  if (off.status !== 404) throw new Error(`ROWHOUSE_CHANGE_LOG=off: the feed answered ${off.status}, not 404`);
  checks.push('the log-off service has no feed (404); the logged one numbers its changes from 1');

  // (b) webhook delivery, commit to the receiver's 200.
  const arrivals: { id: string; sequence: number; at: number; occurredAt: string }[] = [];
  const ids = new Set<string>();
  let resolveAll: () => void = () => {};
  const all = new Promise<void>((r) => (resolveAll = r));
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200).end();
      if (ids.has(body.id)) delivery.duplicates++;
      else {
        ids.add(body.id);
        arrivals.push({ id: body.id, sequence: body.change.sequence, at: Date.now(), occurredAt: body.change.occurredAt });
        if (ids.size >= EVENTS) resolveAll();
      }
    });
  });
  receiver.server = server;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  await createBenchTable(logged.url, 'hooked');
  await api(logged.url, 'POST', '/api/flows', { name: 'bench', enabled: true, definition: { trigger: { table: 'hooked', events: ['create'] }, webhook: { url: `http://127.0.0.1:${port}/hook` } } });
  // Let the worker see the flow (it looks at least once a second) before the first write.
  await new Promise((r) => setTimeout(r, 1500));
  const bodies = bulkBodies('h', Math.ceil(EVENTS / SIZE)).map((b, k) => ({ data: b.data.slice(0, Math.min(SIZE, EVENTS - k * SIZE)) }));
  const progress = setInterval(() => console.log(`  … ${ids.size} of ${EVENTS} events delivered`), 15_000);
  const t0 = performance.now();
  for (const body of bodies) await post(logged, '/api/tables/hooked/rows-bulk', body);
  delivery.writeSeconds = (performance.now() - t0) / 1000;
  await all;
  delivery.seconds = (performance.now() - t0) / 1000;
  clearInterval(progress);
  delivery.delays = arrivals.map((a) => a.at - Date.parse(a.occurredAt)).sort((x, y) => x - y);
  const inOrder = arrivals.every((a, i) => a.sequence === i + 1);
  if (!inOrder) throw new Error('the events did not arrive in sequence order');
  checks.push(`${EVENTS} events, each id once, in sequence order (${delivery.duplicates} repeated arrivals)`);

  // (c) the feed of (a)'s table, read whole, three times.
  feedLength = (ROUNDS + 1) * BULKS * SIZE;
  for (let read = 0; read < 3; read++) {
    const t1 = performance.now();
    let cursor = 0;
    let count = 0;
    for (;;) {
      const res = await fetch(`${logged.url}/api/tables/a/changes?after=${cursor}&limit=1000`, { headers: { 'x-api-key': BENCH_KEY } });
      if (!res.ok) throw new Error(`feed → ${res.status}`);
      const page = (await res.json()) as { data: { sequence: number }[]; nextCursor: number };
      if (page.data.length === 0) break;
      if (page.data[0].sequence !== cursor + 1) throw new Error(`the feed skipped from ${cursor} to ${page.data[0].sequence}`);
      count += page.data.length;
      cursor = page.nextCursor;
    }
    if (count !== feedLength) throw new Error(`the feed held ${count} changes, expected ${feedLength}`);
    feedReads.push(count / ((performance.now() - t1) / 1000));
  }
  checks.push(`the feed of table a read whole three times: ${feedLength} changes, numbered without gaps`);
} finally {
  await logged.stop();
  await unlogged.stop();
  const server = receiver.server;
  if (server) {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
  await postgres?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}

const best = (xs: Run[]) => xs.reduce((a, b) => (b.rowsPerSecond > a.rowsPerSecond ? b : a));
const on = best(runs.on);
const offBest = best(runs.off);
const ratios = runs.on.map((r, k) => r.rowsPerSecond / runs.off[k].rowsPerSecond);
const ratio = median(ratios);
const cpuOn = median(runs.on.map((r) => r.cpuUsPerRow));
const cpuOff = median(runs.off.map((r) => r.cpuUsPerRow));
const pct = (p: number) => delivery.delays[Math.min(delivery.delays.length - 1, Math.floor(p * delivery.delays.length))] / 1000;

console.log(
  `\n${postgres ? 'PostgreSQL' : 'SQLite'}: node bin/rowhouse.mjs serve (the build in dist/); ${os.cpus().length} cores, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}\n`,
);
console.log(`(a) ${BULKS} sequential bulk creates of ${SIZE} dataset rows, ${ROUNDS} rounds after a warm-up round (rows/s: the best round)`);
console.log(`${'service'.padEnd(34)} ${'rows/s'.padStart(8)} ${'CPU µs/row'.padStart(11)}`);
console.log(`${'change log on (the default)'.padEnd(34)} ${on.rowsPerSecond.toFixed(0).padStart(8)} ${cpuOn.toFixed(1).padStart(11)}`);
console.log(`${'ROWHOUSE_CHANGE_LOG=off'.padEnd(34)} ${offBest.rowsPerSecond.toFixed(0).padStart(8)} ${cpuOff.toFixed(1).padStart(11)}`);
if (postgres) {
  const dbCpu = (xs: Run[]) => median(xs.map((r) => r.databaseCpuUsPerRow));
  console.log(`PostgreSQL server CPU µs/row for its connections (median of the rounds): log on ${dbCpu(runs.on).toFixed(1)}, off ${dbCpu(runs.off).toFixed(1)}`);
}
console.log(`on/off: median of the rounds ${ratio.toFixed(2)} (per round ${ratios.map((x) => x.toFixed(2)).join(' ')}; best against best ${(on.rowsPerSecond / offBest.rowsPerSecond).toFixed(2)}); CPU per row (median of the rounds) off/on ${(cpuOff / cpuOn).toFixed(2)}`);
console.log(`\n(b) webhook delivery: ${EVENTS} changes by ${Math.ceil(EVENTS / SIZE)} bulk creates, one flow, a receiver answering 200 at once`);
console.log(`${(EVENTS / delivery.seconds).toFixed(0)} events/s from the first write to the last arrival (${delivery.seconds.toFixed(1)} s; the writes alone took ${delivery.writeSeconds.toFixed(1)} s)`);
console.log(`delay from a change's write to its arrival: median ${pct(0.5).toFixed(1)} s, p99 ${pct(0.99).toFixed(1)} s, max ${pct(1).toFixed(1)} s`);
console.log(`\n(c) the changes feed of a ${feedLength}-change table read whole, limit=1000, following nextCursor`);
console.log(`${median(feedReads).toFixed(0)} changes/s (median of 3 reads: ${feedReads.map((x) => x.toFixed(0)).join(' ')})`);
for (const c of checks) console.log(`checked: ${c}`);

const budgets: [string, boolean][] = [[`bulk create with the change log at least ${RATIO_GOAL * 100}% of the rows/s without it (median of the rounds: ${(ratio * 100).toFixed(0)}%)`, ratio >= RATIO_GOAL]];
console.log('\nbudgets:');
for (const [what, ok] of budgets) console.log(`  ${ok ? 'PASS' : 'FAIL'}  ${what}`);
process.exit(budgets.every(([, ok]) => ok) ? 0 : 1);
