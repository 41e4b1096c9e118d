// Change streams under load (issue 31): STREAMS clients hold the change stream of one table open
// (Server-Sent Events over real HTTP connections, one socket each) while WRITES single-row creates a
// second commit to that table, paced at a steady rate, for SECONDS; `rowhouse serve` from the build
// (run `npm run build` first), SQLite or, with BENCH_DATABASE=postgres, a PostgreSQL server the
// bench starts.
//
// Each write is a whole row of the benchmark dataset (bench/support/dataset.ts) with one more
// number field, `sentAt`: the time the writer sends the request (ms since the bench began, one
// clock in every thread: performance.timeOrigin + performance.now()). A client notes when each
// event arrives, and measures two latencies:
// - from the change's `occurredAt` (the service's clock, in ms, when it made the write, before
//   the commit) to the arrival: the figure the goal is judged by. The commit comes after
//   occurredAt, so this is an upper bound of commit-to-client latency (it counts the write's own
//   work and its wait for the group commit too), never a flattering one; and it leaves out what
//   only the writer's side adds (requests queued on its connections when the machine is busy).
// - from `sentAt` to the arrival: end to end, the same plus the request's way to the service. The
//   write's own latency (answer less send) is printed beside them.
// - from the write's answer to the arrival, at the first stream of each client thread: a lower
//   bound (the service wakes the streams once the commit is done, before it writes the answer, so
//   events often arrive first: they count as 0). The true figure lies between the two bounds.
//
// The clients run in worker threads (BENCH_STREAM_WORKERS, default the machine's cores, at most
// 4), each with an http.Agent allowing all of its sockets, so that parsing a million events a
// second is spread over cores rather than becoming the measured delay. Each checks that its
// streams get every write, once, in sequence order. The service's VmRSS and RssAnon (its own
// memory; RssFile is the database file SQLite's reader maps, the OS's cache) are sampled every
// 500 ms: the mean RssAnon of the run's last third must not exceed that of its first by more
// than 10% (and 16 MiB).
//
// The service needs no limit raised for 1,000 streams: Node's server caps no connection count,
// Fastify's connectionTimeout is off, requestTimeout bounds only receiving a request, and a stream
// holds no database connection. The file descriptors (1,000 sockets in each process) fit the
// usual ulimit -n (printed; at least 2 × streams + 200 needed).
//
//   npm run build && node --import tsx bench/stream.ts [streams=1000] [writes/s=1000] [seconds=30]
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';

/** A worker runs this file, through tsx (a worker's entry is not loaded through the hooks of --import tsx in Node 20). */
const WORKER_BOOT = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(import.meta.url)}); })`;

/** Latency histogram: buckets of 0.1 ms up to 30 s (beyond: the last). */
const BUCKET_MS = 0.1;
const BUCKETS = 300_000;
const now = () => performance.timeOrigin + performance.now();

interface ClientSetup {
  base: string;
  key: string;
  table: string;
  streams: number;
  t0: number;
  thirdMs: number;
  /** How many writes at most (the rows' ids count from 0). */
  writes: number;
}

interface ClientReport {
  /** Latency from the send, a histogram per third of the run (by send time); then from the change's occurredAt. */
  histograms: Uint32Array[];
  fromCommit: Uint32Array[];
  events: number;
  /** Per stream: events received. */
  counts: number[];
  /** Streams that got an id not above the one before (a repeat or an out-of-order change). */
  disordered: number;
  /** Streams the server ended. */
  ended: number;
  /** Events without a sentAt (not the bench's). */
  unstamped: number;
  /** Latency from the write's answer, for the first stream of the worker: a lower bound. */
  fromAnswer: Uint32Array;
}

if (!isMainThread) await runClients(workerData as ClientSetup);
else await main();

/** A worker: opens its streams, measures every event, answers its report when told the writes are over. */
async function runClients(setup: ClientSetup): Promise<void> {
  const port = parentPort as NonNullable<typeof parentPort>;
  const agent = new http.Agent({ keepAlive: false, maxSockets: setup.streams });
  const histograms = [0, 1, 2].map(() => new Uint32Array(BUCKETS));
  const fromCommit = [0, 1, 2].map(() => new Uint32Array(BUCKETS));
  const counts = new Array<number>(setup.streams).fill(0);
  const lastIds = new Array<number>(setup.streams).fill(0);
  const fromAnswer = new Uint32Array(BUCKETS);
  const report: ClientReport = { histograms, fromCommit, events: 0, counts, disordered: 0, ended: 0, unstamped: 0, fromAnswer };
  /** When each change arrived at the first stream, by the row's number (its id's last 12 hex digits, less one). */
  const firstArrivals = new Float64Array(setup.writes).fill(NaN);
  const disordered = new Set<number>();
  const requests: http.ClientRequest[] = [];
  let expected = Infinity;
  /** When the first write was sent (ms after t0): the thirds of the run count from it. */
  let shift = 0;
  let done: () => void = () => {};
  const finished = new Promise<void>((resolve) => (done = resolve));
  const check = () => {
    if (counts.every((c) => c >= expected)) done();
  };

  const open = (i: number) =>
    new Promise<void>((resolve, reject) => {
      const req = http.get(`${setup.base}/api/tables/${setup.table}/changes/stream`, { agent, headers: { accept: 'text/event-stream', 'x-api-key': setup.key } }, (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`stream ${i}: ${res.statusCode}`));
          return;
        }
        res.setEncoding('utf8');
        let rest = '';
        let opened = false;
        res.on('data', (chunk: string) => {
          const at = now() - setup.t0;
          const text = rest + chunk;
          let pos = 0;
          let end: number;
          while ((end = text.indexOf('\n\n', pos)) >= 0) {
            if (text.startsWith('id: ', pos)) {
              const id = Number(text.slice(pos + 4, text.indexOf('\n', pos)));
              if (!(id > lastIds[i])) disordered.add(i);
              lastIds[i] = id;
              counts[i]++;
              report.events++;
              const s = text.indexOf('"sentAt":', pos);
              if (s < 0 || s > end) report.unstamped++;
              else {
                const sent = parseFloat(text.slice(s + 9, s + 40));
                const third = Math.min(2, Math.max(0, Math.floor((sent - shift) / setup.thirdMs)));
                histograms[third][bucket(at - sent)]++;
                const o = text.indexOf('"occurredAt":"', s);
                fromCommit[third][bucket(at + setup.t0 - Date.parse(text.slice(o + 14, o + 38)))]++;
                if (i === 0) {
                  const r = text.indexOf('"rowId":"', pos);
                  const row = parseInt(text.slice(r + 9 + 24, r + 9 + 36), 16) - 1;
                  if (row >= 0 && row < firstArrivals.length) firstArrivals[row] = at;
                }
              }
            } else if (!opened && text.slice(pos, end).includes(': open')) {
              opened = true;
              resolve();
            }
            pos = end + 2;
          }
          rest = text.slice(pos);
          if (counts[i] >= expected) check();
        });
        res.on('end', () => report.ended++);
        // Cut off by this client at the end.
        res.on('error', () => {});
      });
      req.on('error', reject);
      requests.push(req);
    });

  // Opened 50 at a time (the server's listen backlog is 511).
  for (let i = 0; i < setup.streams; i += 50) await Promise.all(Array.from({ length: Math.min(50, setup.streams - i) }, (_, k) => open(i + k)));
  port.postMessage({ type: 'open' });
  port.on('message', (m: { type: 'shift'; shift: number } | { type: 'expect'; rows: number; waitMs: number; answeredAt: Float64Array }) => {
    if (m.type === 'shift') {
      shift = m.shift;
      return;
    }
    expected = m.rows;
    check();
    const timer = setTimeout(done, m.waitMs);
    void finished.then(() => {
      clearTimeout(timer);
      report.disordered = disordered.size;
      for (let row = 0; row < firstArrivals.length; row++) {
        if (!Number.isNaN(firstArrivals[row]) && !Number.isNaN(m.answeredAt[row])) fromAnswer[bucket(firstArrivals[row] - m.answeredAt[row])]++;
      }
      for (const r of requests) r.destroy();
      agent.destroy();
      port.postMessage({ type: 'report', report }, [...histograms, ...fromCommit, fromAnswer].map((h) => h.buffer as ArrayBuffer));
    });
  });
}

async function main(): Promise<void> {
  const { createBenchTable, dataset } = await import('./support/dataset.ts');
  const { BENCH_KEY, benchDatabase, cpuMs, memory, startService } = await import('./support/processes.ts');

  const STREAMS = Number(process.argv[2] ?? 1000);
  const RATE = Number(process.argv[3] ?? 1000);
  const SECONDS = Number(process.argv[4] ?? 30);
  const WORKERS = Math.max(1, Math.min(STREAMS, Number(process.env.BENCH_STREAM_WORKERS ?? Math.min(4, os.cpus().length))));
  if (![STREAMS, RATE, SECONDS, WORKERS].every((n) => Number.isInteger(n) && n >= 1)) throw new Error('usage: bench/stream.ts [streams=1000] [writes/s=1000] [seconds=30]');
  const P99_GOAL_MS = 100;
  const GROWTH = { ratio: 1.1, mib: 16 };

  const { dir, postgres, env } = await benchDatabase('stream');
  const ds = await dataset();
  const values = [...ds.rows(10_000, 7)].map((r) => r.values);
  const service = await startService(env);
  const pid = service.child.pid as number;
  const workers: Worker[] = [];
  try {
    await createBenchTable(service.url, 'bench', [{ code: 'sentAt', type: 'number' }]);
    const t0 = now();
    const thirdMs = (SECONDS * 1000) / 3;

    // The streams, spread over the workers.
    const reports: Promise<ClientReport>[] = [];
    const opened: Promise<void>[] = [];
    for (let w = 0; w < WORKERS; w++) {
      const streams = Math.floor(STREAMS / WORKERS) + (w < STREAMS % WORKERS ? 1 : 0);
      const worker = new Worker(WORKER_BOOT, { eval: true, workerData: { base: service.url, key: BENCH_KEY, table: 'bench', streams, t0, thirdMs, writes: RATE * SECONDS } satisfies ClientSetup });
      workers.push(worker);
      opened.push(new Promise((resolve, reject) => {
        worker.once('error', reject);
        worker.once('message', () => resolve());
      }));
      reports.push(new Promise((resolve, reject) => {
        worker.on('error', reject);
        worker.on('message', (m: { type: string; report?: ClientReport }) => m.type === 'report' && resolve(m.report as ClientReport));
      }));
    }
    await Promise.all(opened);
    const openedAt = now() - t0;
    console.log(`${STREAMS} streams open (${WORKERS} client threads) in ${(openedAt / 1000).toFixed(1)} s; ulimit -n ${fs.readFileSync('/proc/self/limits', 'utf8').match(/Max open files\s+(\d+)/)?.[1]}`);

    // The writes: single-row creates at RATE a second, from a pool of keep-alive connections.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
    const url = new URL(`${service.url}/api/tables/bench/rows`);
    const writeMs: number[] = [];
    /** When each write was answered (ms after t0), by its row's number. */
    const answeredAt = new Float64Array(RATE * SECONDS).fill(NaN);
    let sent = 0;
    let answered = 0;
    let failed = 0;
    let inFlight = 0;
    let mostInFlight = 0;
    const write = (i: number) => {
      const sentAt = now() - t0;
      const body = JSON.stringify({ id: ds.rowId(i), values: { ...values[i % values.length], sentAt: Math.round(sentAt * 1000) / 1000 } });
      inFlight++;
      mostInFlight = Math.max(mostInFlight, inFlight);
      const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-api-key': BENCH_KEY } }, (res) => {
        res.resume();
        res.on('end', () => {
          inFlight--;
          if (res.statusCode === 201) {
            answered++;
            answeredAt[i] = now() - t0;
            writeMs.push(now() - t0 - sentAt);
          } else failed++;
        });
      });
      req.on('error', () => {
        inFlight--;
        failed++;
      });
      req.end(body);
    };

    const samples: { at: number; rss: number; anon: number }[] = [];
    const sample = () => {
      const m = memory(pid);
      samples.push({ at: now() - t0, rss: m.rss, anon: m.anon });
    };
    const cpu0 = cpuMs(pid).total;
    const start = now();
    // The thirds are counted from the first write.
    const shift = start - t0;
    for (const w of workers) w.postMessage({ type: 'shift', shift });
    sample();
    const sampler = setInterval(sample, 500);
    await new Promise<void>((resolve) => {
      const pace = setInterval(() => {
        const elapsed = now() - start;
        const due = Math.min(RATE * SECONDS, Math.floor((elapsed / 1000) * RATE));
        while (sent < due) write(sent++);
        if (elapsed >= SECONDS * 1000) {
          clearInterval(pace);
          resolve();
        }
      }, 2);
    });
    const paceSeconds = (now() - start) / 1000;
    while (inFlight > 0) await new Promise((r) => setTimeout(r, 10));
    // Until the last answer: a service that falls behind answers at a lower rate than was asked.
    const writeSeconds = (now() - start) / 1000;
    clearInterval(sampler);
    sample();
    const cpu = cpuMs(pid).total - cpu0;
    agent.destroy();

    // Every stream should have every write: the clients report once they have, or after 30 s.
    for (const w of workers) w.postMessage({ type: 'expect', rows: answered, waitMs: 30_000, answeredAt });
    const all = await Promise.all(reports);
    /** The workers' histograms of one kind added up: per third, and the whole run. */
    const addUp = (pick: (r: ClientReport) => Uint32Array[]) => {
      const thirds = [0, 1, 2].map((k) => {
        const h = new Uint32Array(BUCKETS);
        for (const r of all) {
          const part = pick(r)[k];
          for (let b = 0; b < BUCKETS; b++) h[b] += part[b];
        }
        return h;
      });
      const whole = new Uint32Array(BUCKETS);
      for (const h of thirds) for (let b = 0; b < BUCKETS; b++) whole[b] += h[b];
      return { thirds, whole };
    };
    const fromCommit = addUp((r) => r.fromCommit);
    const fromSend = addUp((r) => r.histograms);
    const counts = all.flatMap((r) => r.counts);
    const short = counts.filter((c) => c < answered).length;
    const extra = counts.filter((c) => c > answered).length;
    const disordered = all.reduce((s, r) => s + r.disordered, 0);
    const ended = all.reduce((s, r) => s + r.ended, 0);
    const unstamped = all.reduce((s, r) => s + r.unstamped, 0);

    const thirds = [0, 1, 2].map((k) => samples.filter((s) => s.at - shift >= k * thirdMs && s.at - shift < (k + 1) * thirdMs + (k === 2 ? 1e9 : 0)));
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
    const anonFirst = mean(thirds[0].map((s) => s.anon));
    const anonLast = mean(thirds[2].map((s) => s.anon));
    const rssFirst = mean(thirds[0].map((s) => s.rss));
    const rssLast = mean(thirds[2].map((s) => s.rss));
    const sortedWrites = writeMs.sort((a, b) => a - b);
    const wq = (p: number) => sortedWrites[Math.min(sortedWrites.length - 1, Math.floor(p * sortedWrites.length))] ?? NaN;
    const p50 = quantile(fromCommit.whole, 0.5);
    const p99 = quantile(fromCommit.whole, 0.99);

    console.log(`\n${postgres ? 'PostgreSQL' : 'SQLite'}: node bin/rowhouse.mjs serve (the build); ${os.cpus().length} cores, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
    console.log(`${STREAMS} streams on one table; ${RATE} single-row creates/s asked for ${SECONDS} s: ${answered} answered 201 in ${writeSeconds.toFixed(1)} s (${(answered / writeSeconds).toFixed(0)}/s; sent over ${paceSeconds.toFixed(1)} s), ${failed} failed, at most ${mostInFlight} in flight`);
    console.log(`events delivered: ${all.reduce((s, r) => s + r.events, 0)} (${answered} × ${STREAMS} = ${answered * STREAMS} expected)`);
    const line = (label: string, h: Uint32Array, max = false) =>
      console.log(`  ${label.padEnd(12)} p50 ${quantile(h, 0.5).toFixed(1).padStart(7)}   p99 ${quantile(h, 0.99).toFixed(1).padStart(7)}${max ? `   max ${quantile(h, 1).toFixed(1).padStart(7)}` : ''}`);
    for (const [title, h] of [
      [`latency from the change's occurredAt (the service's clock when it made the write, before its commit) to the event's arrival, ms:`, fromCommit],
      [`latency from the write's send (the writer's clock, before the request went out) to the event's arrival, ms:`, fromSend],
    ] as const) {
      console.log(title);
      line('whole run', h.whole, true);
      h.thirds.forEach((t, k) => line(`third ${k + 1}`, t));
    }
    const answerSide = new Uint32Array(BUCKETS);
    for (const r of all) for (let b = 0; b < BUCKETS; b++) answerSide[b] += r.fromAnswer[b];
    console.log(`latency from the write's answer (a lower bound: events arriving before the answer count as 0) to the arrival at each client thread's first stream, ms:`);
    line('whole run', answerSide, true);
    console.log(`the write's own latency (answer less send), ms: p50 ${wq(0.5).toFixed(1)}, p99 ${wq(0.99).toFixed(1)}`);
    console.log(`service CPU: ${((cpu / (writeSeconds * 1000)) * 100).toFixed(0)}% of a core over the writes`);
    console.log(`service memory (MiB, mean of the samples): RSS first third ${rssFirst.toFixed(0)}, last third ${rssLast.toFixed(0)}; RssAnon first ${anonFirst.toFixed(0)}, last ${anonLast.toFixed(0)}; peak RSS ${Math.max(...samples.map((s) => s.rss)).toFixed(0)}`);
    console.log(`  RssAnon every ~${(thirdMs / 3000).toFixed(1)} s: ${samples.filter((_, i) => i % Math.max(1, Math.round(thirdMs / 1500)) === 0).map((s) => s.anon.toFixed(0)).join(' ')}`);

    const budgets: [string, boolean][] = [
      [`every stream got every write once, in order (short ${short}, over ${extra}, out of order ${disordered}, ended by the server ${ended}, unstamped events ${unstamped})`, short + extra + disordered + ended + unstamped === 0],
      [`the writes kept the asked rate (${(answered / writeSeconds).toFixed(0)}/s of ${RATE}/s, at least 95%) and none failed`, answered / writeSeconds >= 0.95 * RATE && failed === 0],
      [`memory does not grow: RssAnon of the last third ${anonLast.toFixed(0)} MiB at most ${GROWTH.ratio}× (and ${GROWTH.mib} MiB over) the first's ${anonFirst.toFixed(0)} MiB`, anonLast <= Math.max(anonFirst * GROWTH.ratio, anonFirst + GROWTH.mib)],
    ];
    if (!postgres) budgets.push([`p99 latency under ${P99_GOAL_MS} ms on SQLite (${p99.toFixed(1)} ms)`, p99 < P99_GOAL_MS]);
    console.log('\nbudgets:');
    for (const [what, ok] of budgets) console.log(`  ${ok ? 'PASS' : 'FAIL'}  ${what}`);
    process.exitCode = budgets.every(([, ok]) => ok) ? 0 : 1;
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
    await service.stop();
    await postgres?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function bucket(ms: number): number {
  return Math.min(BUCKETS - 1, Math.max(0, Math.floor(ms / BUCKET_MS)));
}

/** The value at quantile q of a histogram (the bucket's upper edge), in ms. */
function quantile(h: Uint32Array, q: number): number {
  let total = 0;
  for (let b = 0; b < h.length; b++) total += h[b];
  if (total === 0) return NaN;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (let b = 0; b < h.length; b++) {
    seen += h[b];
    if (seen >= rank) return (b + 1) * BUCKET_MS;
  }
  return h.length * BUCKET_MS;
}
