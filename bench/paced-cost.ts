// Why a paced single-row create costs the service more CPU than one of a burst (issue 31: at
// 1,000 creates a second, 0.74 ms of the main thread's CPU per create; in a burst, 0.40), and how
// much of it is ours. Two comparisons, each side by side in alternating rounds, by CPU time
// from /proc (a shared machine's load moves wall time, barely CPU time):
// 1. The same work in this process, no HTTP and no service: parse a dataset row's JSON, insert it
//    into a SQLite table (WAL, two indexes) and commit, stringify it. Back to back, then one unit
//    per 1 ms and per 10 ms (setTimeout in between), the CPU time of the unit alone
//    (process.cpuUsage around it) and its wall time. What an idle gap costs the same code
//    (what the gap leaves in the caches), whatever the service does.
// 2. The service and the floor (bench/floor-server.ts: Fastify and one prepared insert, each
//    create its own commit, no change log, no group commit) on the same table: single-row creates
//    of whole dataset rows with fresh client ids, in a burst (10 connections, each sending as the
//    one before it is answered: the service's group commit takes several creates a commit), paced
//    (R a second, one at a time, open loop) and paced in groups (RxK: R a second, K sent at once).
//    CPU per create of the main thread (/proc/PID/task/PID/stat) and of the whole process (the
//    checkpoint worker and libuv's threads too); the service at its default log level (info: an
//    access line per create). The floor's paced/burst ratio is what the
//    platform charges an idle gap; the service's beyond it is ours.
//   node --import tsx bench/paced-cost.ts [rounds=3] [creates per phase=2000] [phases=100,100x10,1000]
// A paced phase sends min(creates per phase, R x 60) creates. Each side first takes a burst of
// `creates per phase` (V8's first compilations). Meant for SQLite (BENCH_DATABASE=postgres runs the
// second part on PostgreSQL). BENCH_NODE_ARGS="…" (space separated) starts the service's node with those
// flags, as an experiment only (the launcher sets none).
import fs from 'node:fs';
import http from 'node:http';
import SqliteDatabase from 'better-sqlite3';
import { median } from './support/rounds.ts';
import { createBenchTable, dataset, floorTable } from './support/dataset.ts';
import { BENCH_KEY, benchDatabase, cpuMs, type Proc, startFloor, startService } from './support/processes.ts';

const ROUNDS = Number(process.argv[2] ?? 3);
const PER_PHASE = Number(process.argv[3] ?? 2000);
const RATES = (process.argv[4] ?? '100,100x10,1000').split(',');

const { env, db, dir } = await benchDatabase('paced');
const ds = await dataset();

// 1. The same work in this process.
{
  const same = new SqliteDatabase(`${dir}/same-work.db`);
  same.pragma('journal_mode = WAL');
  same.pragma('synchronous = NORMAL');
  same.exec('create table t (id text primary key, created_at text, v text, status text, amount real)');
  same.exec('create index t_status on t (status)');
  same.exec('create index t_amount on t (amount)');
  const insert = same.prepare('insert into t values (?, ?, ?, ?, ?)');
  const bodies = [...ds.rows(10_000, 7)].map((r, i) => JSON.stringify({ id: ds.rowId(i), values: r.values }));
  let k = 0;
  const unit = () => {
    const body = JSON.parse(bodies[k % bodies.length]) as { id: string; values: Record<string, unknown> };
    insert.run(`${body.id}-${k++}`, new Date().toISOString(), JSON.stringify(body.values), String(body.values.status), Number(body.values.amount) || 0);
    return JSON.stringify(body).length;
  };
  const cpuUs = () => {
    const u = process.cpuUsage();
    return u.user + u.system;
  };
  const backToBack = (n: number) => {
    const c = cpuUs();
    const t = performance.now();
    for (let i = 0; i < n; i++) unit();
    return { cpu: (cpuUs() - c) / n, wall: ((performance.now() - t) * 1000) / n };
  };
  const spaced = async (n: number, gapMs: number) => {
    let cpu = 0;
    let wall = 0;
    for (let i = 0; i < n; i++) {
      await new Promise((resolve) => setTimeout(resolve, gapMs));
      const c = cpuUs();
      const t = performance.now();
      unit();
      wall += performance.now() - t;
      cpu += cpuUs() - c;
    }
    return { cpu: cpu / n, wall: (wall * 1000) / n };
  };
  backToBack(5000);
  const sides = { 'back to back': [] as { cpu: number; wall: number }[], 'one per 1 ms': [] as { cpu: number; wall: number }[], 'one per 10 ms': [] as { cpu: number; wall: number }[] };
  for (let round = 0; round < ROUNDS; round++) {
    sides['back to back'].push(backToBack(2000));
    sides['one per 1 ms'].push(await spaced(1000, 1));
    sides['one per 10 ms'].push(await spaced(300, 10));
  }
  console.log('the same work in this process (parse, insert and commit, stringify), median µs per unit: CPU, wall');
  for (const [name, xs] of Object.entries(sides)) console.log(`  ${name.padEnd(14)} ${median(xs.map((x) => x.cpu)).toFixed(1).padStart(7)} ${median(xs.map((x) => x.wall)).toFixed(1).padStart(7)}`);
  same.close();
}

const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const service = await startService(env, undefined, nodeArgs);
const table = await createBenchTable(service.url);
const floor = await startFloor(db, [floorTable(ds, table)]);
interface Target { name: string; proc: Proc; path: string; headers: Record<string, string> }
const targets: Target[] = [
  { name: 'service', proc: service, path: '/api/tables/bench/rows', headers: { 'x-api-key': BENCH_KEY } },
  { name: 'floor', proc: floor, path: '/rows', headers: {} },
];
const values = [...ds.rows(10_000, 7)].map((r) => r.values);
const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
let next = 0;

/** CPU ms so far of the process's main thread and of the whole process. */
const cpu = (pid: number) => ({ main: cpuMs(pid, pid).total, all: cpuMs(pid).total });

const create = (to: Target) =>
  new Promise<void>((resolve, reject) => {
    const body = JSON.stringify({ id: ds.rowId(next), values: values[next++ % values.length] });
    const req = http.request(
      `${to.proc.url}${to.path}`,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...to.headers } },
      (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 201 ? resolve() : reject(new Error(`create answered ${res.statusCode}`))));
      },
    );
    req.on('error', reject);
    req.end(body);
  });

/** `n` creates on 10 connections, each sent as the one before it on its connection is answered. */
const burst = async (to: Target, n: number) => {
  let left = n;
  await Promise.all(Array.from({ length: 10 }, async () => {
    while (left-- > 0) await create(to);
  }));
};

/** `n` creates at `rate` a second, `together` at a time (sent at once), each group on time whatever the answers (open loop). */
const paced = (to: Target, n: number, rate: number, together: number) =>
  new Promise<void>((resolve, reject) => {
    let sent = 0;
    let done = 0;
    const t0 = performance.now();
    const tick = () => {
      const due = Math.min(n, (Math.floor(((performance.now() - t0) / 1000) * (rate / together)) + 1) * together);
      for (; sent < due; sent++) create(to).then(() => ++done === n && resolve(), reject);
      if (sent < n) setTimeout(tick, Math.max(1, Math.min(10, (1000 * together) / rate / 2)));
    };
    tick();
  });

/** A phase: `burst`, or `R` (R creates a second, one at a time) or `RxK` (R a second, K at once). */
const phases = ['burst', ...RATES].map((spec) => {
  if (spec === 'burst') return { name: 'burst', n: PER_PHASE, run: (to: Target) => burst(to, PER_PHASE) };
  const [rate, together = 1] = spec.split('x').map(Number);
  const n = Math.min(PER_PHASE, rate * 60);
  return { name: together > 1 ? `paced ${rate}/s by ${together}` : `paced ${rate}/s`, n, run: (to: Target) => paced(to, n, rate, together) };
});

// Warm-up: as many creates as one round, in a burst, so that the first round does not pay for V8's first compilations alone.
for (const to of targets) await burst(to, PER_PHASE);
const results = new Map<string, { main: number[]; all: number[] }>();
for (let round = 0; round < ROUNDS; round++) {
  for (const phase of round % 2 ? [...phases].reverse() : phases) {
    for (const to of round % 2 ? [...targets].reverse() : targets) {
      const pid = to.proc.child.pid as number;
      const before = cpu(pid);
      const t0 = performance.now();
      await phase.run(to);
      const seconds = (performance.now() - t0) / 1000;
      const after = cpu(pid);
      const key = `${to.name.padEnd(8)} ${phase.name.padEnd(18)}`;
      const r = results.get(key) ?? { main: [], all: [] };
      results.set(key, r);
      r.main.push((after.main - before.main) / phase.n);
      r.all.push((after.all - before.all) / phase.n);
      console.log(`round ${round + 1} ${key} ${phase.n} creates in ${seconds.toFixed(1)} s: main thread ${((after.main - before.main) / phase.n).toFixed(3)} ms, process ${((after.all - before.all) / phase.n).toFixed(3)} ms per create`);
    }
  }
}
console.log('\nmedian CPU per create (ms): target, phase, main thread, whole process');
for (const key of [...results.keys()].sort()) {
  const r = results.get(key) as { main: number[]; all: number[] };
  console.log(`${key} ${median(r.main).toFixed(3)}  ${median(r.all).toFixed(3)}`);
}
await service.stop();
await floor.stop();
fs.rmSync(dir, { recursive: true, force: true });
