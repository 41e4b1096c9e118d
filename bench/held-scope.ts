// What the request scope of Idempotency-Key's held transactions costs the requests around it
// (issue 29; store/transaction-hooks.ts heldScope): an AsyncLocalStorage, which on Node 20 runs a
// promise hook for every promise of the process while it is enabled. In one process (the real app
// through Fastify's inject, 10 requests at a time, on a scratch database), paired rounds alternate
// heldScope disabled (as now once no request holds a held transaction) and enabled (as it stayed
// after the first request with an Idempotency-Key before), and print the process's CPU µs per
// get by id, per plain create and per create with a fresh Idempotency-Key, median of the rounds;
// and how many promises each request makes (counted by a promise hook of its own, in a pass of
// its own), as the CPU figures of a loaded machine may swing more than the hook's cost.
//   node --import tsx bench/held-scope.ts [rounds=8] [requests=400]      (BENCH_DATABASE=postgres too)
import { createHook } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { startApp } from '../test/support/harness.ts';
import { heldScope } from '../src/store/transaction-hooks.ts';
import { median } from './support/rounds.ts';
import { scatteredRows } from './support/scattered.ts';

const ROUNDS = Number(process.argv[2] ?? 8);
const REQUESTS = Number(process.argv[3] ?? 400);
const kind = process.env.BENCH_DATABASE === 'postgres' ? 'postgres' : 'sqlite';
const t = await startApp(kind);
const fields = Array.from({ length: 12 }, (_, i) => ({ code: `f${i}`, type: i % 3 === 0 ? 'number' : 'text' }));
if ((await t.post('/api/tables', { code: 'bench', name: 'Bench', fields })).status !== 201) throw new Error('table not created');
const values = () => Object.fromEntries(fields.map((f, i) => [f.code, f.type === 'number' ? i * 1000.25 : `value ${i} ${'x'.repeat(40)}`]));
const ids: string[] = [];
for (let i = 0; i < 2000; i++) ids.push((await t.post('/api/tables/bench/rows', { values: values() })).body.id);

type Workload = 'get' | 'create' | 'idem';
const someRow = scatteredRows(ids.length);
const send: Record<Workload, () => Promise<{ status: number }>> = {
  get: () => t.get(`/api/tables/bench/rows/${ids[someRow()]}`),
  create: () => t.post('/api/tables/bench/rows', { values: values() }),
  idem: () => t.post('/api/tables/bench/rows', { values: values() }, { headers: { 'idempotency-key': randomUUID() } }),
};
/** CPU µs of this process per request, `REQUESTS` requests 10 at a time. */
async function cpuPerRequest(workload: Workload): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < REQUESTS; i += 10) {
    const answers = await Promise.all(Array.from({ length: 10 }, () => send[workload]()));
    for (const a of answers) if (a.status >= 300) throw new Error(`${workload}: ${a.status}`);
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / REQUESTS;
}
/** Promises and other async resources (ticks, immediates, sockets' requests) made per request: each runs the hook while it is enabled. */
async function resourcesPerRequest(workload: Workload): Promise<{ promises: number; others: number }> {
  let made = 0;
  let others = 0;
  const hook = createHook({ init: (_id, type) => void (type === 'PROMISE' ? made++ : others++) }).enable();
  for (let i = 0; i < 100; i += 10) await Promise.all(Array.from({ length: 10 }, () => send[workload]()));
  hook.disable();
  return { promises: made / 100, others: others / 100 };
}
const setScope = (enabled: boolean) => (enabled ? heldScope.run(undefined, () => heldScope.enterWith(undefined)) : heldScope.disable());

console.log(`${kind}, in process, ${ROUNDS} paired rounds of ${REQUESTS} requests (10 at a time): CPU µs per request, heldScope disabled : enabled`);
for (const workload of ['get', 'create', 'idem'] as const) {
  const runs: Record<'off' | 'on', number[]> = { off: [], on: [] };
  for (const enabled of [false, true]) {
    setScope(enabled);
    await cpuPerRequest(workload); // warm-up
  }
  for (let r = 0; r < ROUNDS; r++) {
    for (const enabled of r % 2 === 0 ? [false, true] : [true, false]) {
      setScope(enabled);
      runs[enabled ? 'on' : 'off'].push(await cpuPerRequest(workload));
    }
  }
  heldScope.disable();
  const made = await resourcesPerRequest(workload);
  const ratios = runs.off.map((off, i) => runs.on[i] / off);
  console.log(`${workload.padEnd(7)} ${median(runs.off).toFixed(0)} : ${median(runs.on).toFixed(0)}   enabled/disabled ${median(ratios).toFixed(3)} (rounds ${ratios.map((x) => x.toFixed(2)).join(', ')}); ${made.promises.toFixed(0)} promises and ${made.others.toFixed(0)} other async resources a request`);
}
await t.close();
