// Soak: mixed traffic against `rowhouse serve` (the build: run `npm run build` first) for a while,
// reporting requests, errors, p99 latency and how the service's memory moves. Each of 10
// connections cycles through reads (first page, a sorted filter, get by id, the changes feed, a
// small filtered CSV export) and writes (create, patch, a 50-row bulk create, a batch), on a table
// loaded through the API. RssAnon (the service's own memory: a leak shows there; the database
// pages SQLite's reader maps are file cache, in RssFile, reported beside it) is sampled every
// second; after the warm-up (the first fifth of the run, at least 10 s) it must stay flat: the
// median of the last tenth of the samples at most 16 MiB above the median of the tenth after the
// warm-up. Any error or non-2xx answer fails it.
//   npm run build && node --import tsx bench/soak.ts [seconds=300] [rows=20000]      (BENCH_DATABASE=postgres too)
import autocannon from 'autocannon';
import fs from 'node:fs';
import { createBenchTable, dataset, loadThroughApi } from './support/dataset.ts';
import { BENCH_KEY, benchDatabase, memory, startService } from './support/processes.ts';
import { scatteredRows } from './support/scattered.ts';

const SECONDS = Number(process.argv[2] ?? 300);
const N = Number(process.argv[3] ?? 20_000);
if (!(SECONDS >= 30) || !(Number.isInteger(N) && N >= 1000)) throw new Error('usage: bench/soak.ts [seconds>=30] [rows>=1000] (the warm-up alone is 10 s)');
const DRIFT_BUDGET_MIB = 16;

const { dir, postgres, env } = await benchDatabase('soak');
const ds = await dataset();

const service = await startService(env);
await createBenchTable(service.url);
await createBenchTable(service.url, 'other');
await loadThroughApi(service.url, 'bench', N);
const pid = service.child.pid as number;

const q = (o: unknown) => encodeURIComponent(JSON.stringify(o));
const someRow = scatteredRows(N);
const someId = () => ds.rowId(someRow());
let made = 0;
const values = () => ({ title: `soak ${made++}`, amount: (made % 10_000) + 0.5, status: 'new' });
type Req = { method: 'GET' | 'POST' | 'PATCH'; path: () => string; body?: () => string };
const requests: Req[] = [
  { method: 'GET', path: () => '/api/tables/bench/rows' },
  {
    method: 'GET',
    path: () =>
      `/api/tables/bench/rows?filter=${q({ values: { status: { _eq: 'paid' }, amount: { _gt: 5000 } } })}` +
      `&sort=${q([{ amount: { direction: 'desc', nulls: 'nullsLast' } }, { id: { direction: 'desc', nulls: 'nullsLast' } }])}`,
  },
  { method: 'GET', path: () => `/api/tables/bench/rows/${someId()}` },
  { method: 'POST', path: () => '/api/tables/bench/rows', body: () => JSON.stringify({ values: values() }) },
  { method: 'PATCH', path: () => `/api/tables/bench/rows/${someId()}`, body: () => JSON.stringify({ values: { amount: (made++ % 10_000) + 0.25 } }) },
  { method: 'GET', path: () => `/api/tables/bench/changes?limit=100&after=${Math.max(0, N + made - 500)}` },
  { method: 'POST', path: () => '/api/tables/other/rows-bulk', body: () => JSON.stringify({ data: Array.from({ length: 50 }, () => ({ values: values() })) }) },
  {
    method: 'POST',
    path: () => '/api/rows-batch',
    body: () =>
      JSON.stringify({
        operations: [
          { type: 'create', tableId: 'other', values: values() },
          { type: 'update', tableId: 'bench', id: someId(), values: { quantity: made++ % 100 } },
          { type: 'create', tableId: 'bench', values: values() },
        ],
      }),
  },
  { method: 'GET', path: () => `/api/tables/bench/rows-export?format=csv&encoding=utf8&newline=lf&filter=${q({ values: { amount: { _gt: 9_950 } } })}` },
];

/** RssAnon each second: memory of the service's own, where a leak would show (memory() in processes.ts). */
const samples: number[] = [];
let fileMiB = { first: 0, last: 0 };
/** Non-2xx answers by request kind, with the first one's body. */
const refused = new Map<string, { n: number; body: string }>();
const timer = setInterval(() => {
  const m = memory(pid);
  samples.push(m.anon);
  fileMiB = { first: fileMiB.first || m.file, last: m.file };
}, 1000);
const result = await autocannon({
  url: service.url,
  connections: 10,
  duration: SECONDS,
  requests: requests.map((r, i) => ({
    method: r.method,
    headers: { 'content-type': 'application/json', 'x-api-key': BENCH_KEY },
    setupRequest: (req: autocannon.Request) => ({ ...req, path: r.path(), ...(r.body ? { body: r.body() } : {}) }),
    onResponse: (status: number, body: string) => {
      if (status < 200 || status > 299) {
        const key = `${r.method} ${requests[i].path().split('?')[0]} → ${status}`;
        const seen = refused.get(key) ?? { n: 0, body };
        seen.n++;
        refused.set(key, seen);
      }
    },
  })),
});
clearInterval(timer);
await service.stop();
await postgres?.stop();
fs.rmSync(dir, { recursive: true, force: true });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const warm = Math.max(10, Math.floor(samples.length / 5));
const tenth = Math.max(1, Math.floor(samples.length / 10));
const after = median(samples.slice(warm, warm + tenth));
const end = median(samples.slice(-tenth));
const drift = end - after;
const failures = result.errors + result.non2xx + result.timeouts;
console.log(`\n${postgres ? 'PostgreSQL' : 'SQLite'}: ${SECONDS} s of mixed traffic (${requests.length} kinds of request in turn) on 10 connections, ${N} rows loaded first\n`);
console.log(`requests ${result.requests.total} (${result.requests.average.toFixed(0)}/s); errors ${result.errors}, timeouts ${result.timeouts}, non-2xx ${result.non2xx}`);
for (const [what, { n, body }] of refused) console.log(`  ${n} × ${what}: ${body.slice(0, 200)}`);
console.log(`latency ms: p50 ${result.latency.p50}, p99 ${result.latency.p99}, max ${result.latency.max}`);
console.log(`RssAnon MiB: start ${samples[0]?.toFixed(1)}, after warm-up ${after.toFixed(1)}, end ${end.toFixed(1)}, peak ${Math.max(...samples).toFixed(1)}; drift ${drift.toFixed(1)} (${samples.length} samples)`);
console.log(`RssFile MiB (mapped files: code, and SQLite's mapped database pages): first sample ${fileMiB.first.toFixed(1)}, last ${fileMiB.last.toFixed(1)}`);
const budgets: [string, boolean][] = [
  ['no errors, timeouts or non-2xx answers', failures === 0],
  [`memory flat after warm-up: drift at most ${DRIFT_BUDGET_MIB} MiB (${drift.toFixed(1)})`, drift <= DRIFT_BUDGET_MIB],
];
console.log('\nbudgets:');
for (const [what, ok] of budgets) console.log(`  ${ok ? 'PASS' : 'FAIL'}  ${what}`);
process.exit(budgets.every(([, ok]) => ok) ? 0 : 1);
