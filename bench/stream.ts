// Change streams under load (issue 31): STREAMS clients hold the change stream of one table open
// (Server-Sent Events over real HTTP connections, one socket each) while WRITES single-row creates a
// second commit to that table, paced at a steady rate, for SECONDS; `rowhouse serve` from the build
// (run `npm run build` first), SQLite or, with BENCH_DATABASE=postgres, a PostgreSQL server the
// bench starts. Each argument may be a list (`1000 100,300,1000 20`): every combination is run, one
// after the other, each on a service and database of its own, and a table of them is printed at the
// end. A configuration with 0 streams measures the writes alone: the service's CPU beyond it, per
// event delivered, is the fan-out's.
//
// What is measured is the service, not the clients. 1,000 streams of 1,000 events a second are a
// million events a second, more than the clients could parse in JavaScript on the cores the service
// runs on. So every stream is a real connection that really reads every byte it is sent (the service
// does the whole fan-out, and its backpressure is real), but only a sample of them
// (BENCH_STREAM_SAMPLE, default 20, spread over the order the streams open in) parse and time their
// events; the others read only their events' ids from the raw socket (bench/stream-clients.ts). The two kinds run in
// two processes of their own, the writer in this one: the CPU of each process over the writes is
// printed, so a client side that cannot keep up shows, and is not mistaken for the service.
//
// Each write is a whole row of the benchmark dataset (bench/support/dataset.ts) with one more
// number field, `sentAt`: the time the writer sends the request (ms since the bench began; one
// clock in every process: performance.timeOrigin + performance.now()). A sampled client notes when
// each event arrives, and measures:
// - from the change's `occurredAt` (the service's clock, in ms, when it made the write, before
//   the commit) to the arrival: the figure the goal is judged by. The commit comes after
//   occurredAt, so this is an upper bound of commit-to-client latency (it counts the write's own
//   work and its wait for the group commit too), never a flattering one; and it leaves out what
//   only the writer's side adds (requests queued on its connections when the machine is busy).
// - from `sentAt` to the arrival: end to end, the same plus the request's way to the service. The
//   write's own latency (answer less send) is printed beside them.
// - from the write's answer to the arrival, at the first sampled stream: a lower bound (the service
//   wakes the streams once the commit is done, before it writes the answer, so events often arrive
//   first: they count as 0). The true figure lies between the two bounds.
// Every stream must get every write, once, in order: as many events as writes answered, each id
// above the one before (counted streams read the ids from the raw bytes, sampled ones parse). The service's VmRSS and RssAnon (its own memory; RssFile is the
// database file SQLite's reader maps, the OS's cache) are sampled every 500 ms and printed every
// 5 s: the mean RssAnon of the run's last third must not exceed that of its middle one by more than
// 10% (and 16 MiB). The first third is warming up, and so can be the second in a short run: the
// service's first major garbage collection came about 90 s into runs of 100 writes a second (its
// heap had grown to 61 MB; 20 MB live after it, and after each one since), and SQLite's page cache
// of the writing connection keeps what it wrote up to 64 MiB. Judge memory on a run of 2 minutes
// or more (`bench/stream.ts 1000 1000 150`).
//
// Per run, and in the table at the end, the service's CPU per write answered (its streams included)
// and per event delivered, and its write system calls a second and their size (/proc/<pid>/io:
// one per stream per read of the log, when the streams keep up). BENCH_STREAM_BULK=n makes each
// write a bulk create of n rows (the same changes for the streams at a fraction of the writes' cost).
//
// Where a change waits (BENCH_STREAM_TRACE=1): the service publishes each round of its streams'
// reader (src/stream/round-trace.ts: the commits that woke it, the read, the text, each stream's
// write by its client's port), bench/support/stream-trace.mjs, loaded into the service, keeps them,
// and each parsed event is placed in them (bench/support/stream-waits.ts): the commit to the parse
// in parts, the service's (the wait for the round, the read, the text, the stream's place among the
// round's writes) and what comes after its socket write (the kernel, the client's turn for a core,
// its event loop). The p99 budget is then judged from the commit itself. A traced service keeps
// every write's time (about 1 MB a second at 1,000 streams): judge memory on an untraced run.
// BENCH_STREAM_NICE=n runs the counted clients at that niceness (they time nothing; see NICE).
// BENCH_STREAM_CORES=split keeps the service on one core and everything else on the others (see SPLIT_CORES).
//
// Two builds side by side: BENCH_STREAM_BEFORE=<a checkout with its own build> (e.g. /work/main,
// after `npm run build` there) runs each configuration on that checkout's build and on this one's,
// BENCH_ROUNDS times (default 1), alternating which goes first; the table names each run's build.
// On a shared machine compare the CPU per event and the latency at a low rate (the fixed delay
// between a commit and its delivery) within one such run only.
//
// The service needs no limit raised for 1,000 streams: Node's server caps no connection count,
// Fastify's connectionTimeout is off, requestTimeout bounds only receiving a request, and a stream
// holds no database connection. The file descriptors (1,000 sockets in each process) fit the
// usual ulimit -n (printed; at least 2 × streams + 200 needed).
//
//   npm run build && node --import tsx bench/stream.ts [streams=1000] [writes/s=1000] [seconds=30]
import { type ChildProcess, execFileSync, fork } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { BUCKETS, BUCKET_MS, type ClientReport, type ClientSetup } from './stream-clients.ts';
import { createBenchTable, dataset } from './support/dataset.ts';
import { BENCH_KEY, ROOT, benchDatabase, cpuMs, memory, startService } from './support/processes.ts';
import { type Waits, printWaits, waits } from './support/stream-waits.ts';

const now = () => performance.timeOrigin + performance.now();
const P99_GOAL_MS = 100;
const GROWTH = { ratio: 1.1, mib: 16 };
const SAMPLE = Number(process.env.BENCH_STREAM_SAMPLE ?? 20);
/**
 * Rows a create request holds (BENCH_STREAM_BULK, default 1: single-row creates). With more, each
 * request a bulk create (`rows-bulk`): the same changes a second for the streams at a fraction of
 * the writes' own cost, which on a busy machine isolates what the fan-out costs the service.
 */
const BULK = Number(process.env.BENCH_STREAM_BULK ?? 1);
/**
 * BENCH_STREAM_TRACE=1: where each change's time goes between its commit and the parse, at the
 * parsed streams (bench/support/stream-waits.ts): the service's rounds are traced
 * (bench/support/stream-trace.mjs, loaded into it; a build without the trace points traces none).
 */
const TRACE = process.env.BENCH_STREAM_TRACE === '1';
/**
 * The counted clients' niceness (BENCH_STREAM_NICE, default 0: as the others). They time nothing;
 * on the service's cores, each socket write wakes them, and the kernel may give them the core the
 * service was writing the round on. Niced, they take what the service leaves, as clients on other
 * machines would (the writer and the parsed clients keep their priority).
 */
const NICE = Number(process.env.BENCH_STREAM_NICE ?? 0);
/**
 * BENCH_STREAM_CORES=split: the service (every thread) on the first core, the clients and the
 * writer (this process) on the others (`taskset`), as if they ran on machines of their own: the
 * service keeps one core whatever the clients do, and they cannot take it when its writes wake
 * them. Without it every process may run on every core.
 */
const SPLIT_CORES = process.env.BENCH_STREAM_CORES === 'split';
/** The machine's cores, counted before this process is pinned (its own affinity then shows one). */
const CORES = os.cpus().length;
/** Pins a process and its threads to the service's core, or to the others (BENCH_STREAM_CORES=split). */
function pin(pid: number, side: 'service' | 'others'): void {
  if (!SPLIT_CORES) return;
  if (CORES < 2) throw new Error('BENCH_STREAM_CORES=split needs two cores or more');
  execFileSync('taskset', ['-a', '-p', '-c', side === 'service' ? '0' : `1-${CORES - 1}`, String(pid)], { stdio: 'ignore' });
}

/** The builds measured: this checkout's, and another's beside it (BENCH_STREAM_BEFORE), BENCH_ROUNDS rounds of each. */
const BEFORE = process.env.BENCH_STREAM_BEFORE;
const BUILDS = BEFORE ? [{ name: 'before', root: BEFORE }, { name: 'after', root: ROOT }] : [{ name: 'this', root: ROOT }];
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
type Build = (typeof BUILDS)[number];

const list = (arg: string | undefined, fallback: number) => (arg ?? String(fallback)).split(',').map(Number);
const STREAMS = list(process.argv[2], 1000);
const RATES = list(process.argv[3], 1000);
const SECONDS = Number(process.argv[4] ?? 30);
if (![...STREAMS, ...RATES, SECONDS, SAMPLE, BULK].every((n) => Number.isInteger(n) && n >= 0) || SECONDS < 1 || RATES.includes(0) || BULK < 1) {
  throw new Error('usage: bench/stream.ts [streams=1000[,…]] [writes/s=1000[,…]] [seconds=30]');
}

interface Outcome {
  build: string;
  round: number;
  streams: number;
  rate: number;
  answeredPerSecond: number;
  failed: number;
  p50: number;
  p99: number;
  serviceCpu: number;
  /** CPU of the service over the writes, ms a second (the share of one core × 1000). */
  serviceCpuMs: number;
  events: number;
  eventsPerSecond: number;
  /** The service's write system calls a second over the writes (/proc/<pid>/io syscw: its sockets' and files' writes), and bytes written a call. */
  syscallsPerSecond: number;
  bytesPerSyscall: number;
  clientsCpu: number;
  writerCpu: number;
  anonFirst: number;
  anonMiddle: number;
  anonLast: number;
  waits?: Waits;
  ok: boolean;
}

const outcomes: Outcome[] = [];
console.log(`${os.cpus().length} cores, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}; ulimit -n ${fs.readFileSync('/proc/self/limits', 'utf8').match(/Max open files\s+(\d+)/)?.[1]}`);
for (const streams of STREAMS) {
  for (const rate of RATES) {
    for (let round = 0; round < ROUNDS; round++) {
      for (const build of round % 2 === 0 ? BUILDS : [...BUILDS].reverse()) outcomes.push({ ...(await measure(streams, rate, SECONDS, build)), round });
    }
  }
}
if (outcomes.length > 1) {
  console.log(`\n${process.env.BENCH_DATABASE === 'postgres' ? 'PostgreSQL' : 'SQLite'}, ${SECONDS} s each: CPU in % of one core over the writes; µs/event is the service's CPU beyond what the writes cost alone (per write, in the 0-stream run at that rate) per event delivered`);
  console.log('ms/write is all the service\'s CPU per write answered (its streams included); µs/ev all is all of it per event delivered');
  console.log('syscalls/s are the service\'s write system calls a second (KiB each); round ms: the time between two writes to a stream, from the syscalls beyond the 0-stream run\'s');
  console.log(`${BUILDS.length > 1 ? 'build   ' : ''}streams  asked/s  answered/s  p50 ms  p99 ms  service%  ms/write  µs/ev all  µs/event  syscalls/s (KiB)  round ms  clients%  writer%  RssAnon MiB by third`);
  for (const o of outcomes) {
    const alone = outcomes.find((b) => b.streams === 0 && b.rate === o.rate && b.build === o.build && b.round === o.round);
    // ms of CPU a second beyond what the writes answered cost alone (at that run's CPU per write), over events a second, in µs.
    const beyond = alone ? o.serviceCpuMs - (alone.serviceCpuMs / alone.answeredPerSecond) * o.answeredPerSecond : NaN;
    const perEvent = o.streams > 0 && o.eventsPerSecond > 0 ? (beyond / o.eventsPerSecond) * 1000 : NaN;
    // Each stream is written once per read of the table's reader: the mean time between them, the longest a change waits for its read.
    const round = alone && o.streams > 0 ? (1000 * o.streams) / (o.syscallsPerSecond - (alone.syscallsPerSecond / alone.answeredPerSecond) * o.answeredPerSecond) : NaN;
    console.log(
      [...(BUILDS.length > 1 ? [o.build.padEnd(7)] : []), String(o.streams).padStart(7), String(o.rate).padStart(8), o.answeredPerSecond.toFixed(0).padStart(11), o.p50.toFixed(1).padStart(7), o.p99.toFixed(1).padStart(7), o.serviceCpu.toFixed(0).padStart(9), (o.serviceCpuMs / o.answeredPerSecond).toFixed(2).padStart(9), (o.eventsPerSecond > 0 ? ((o.serviceCpuMs / o.eventsPerSecond) * 1000).toFixed(2) : '-').padStart(10), (Number.isNaN(perEvent) ? '-' : perEvent.toFixed(1)).padStart(9), `${o.syscallsPerSecond.toFixed(0)} (${(o.bytesPerSyscall / 1024).toFixed(1)})`.padStart(17), (Number.isNaN(round) ? '-' : round.toFixed(1)).padStart(9), o.clientsCpu.toFixed(0).padStart(9), o.writerCpu.toFixed(0).padStart(8), `${o.anonFirst.toFixed(0)} ${o.anonMiddle.toFixed(0)} ${o.anonLast.toFixed(0)}`.padStart(12)].join(' '),
    );
  }
}
const traced = outcomes.filter((o) => o.waits);
if (traced.length > 1) {
  console.log('\nwhere a change waits (BENCH_STREAM_TRACE), ms, p50 / p99: commit to parse, and its parts (bench/support/stream-waits.ts)');
  const parts = ['delivery', 'round', 'pass', 'arrival', 'service', 'write'] as const;
  console.log(`${BUILDS.length > 1 ? 'build   ' : ''}streams  asked/s  ${parts.map((p) => p.padStart(13)).join(' ')}  round ms  pass ms  pass CPU ms`);
  for (const o of traced) {
    const w = o.waits as Waits;
    const cell = (p: (typeof parts)[number]) => `${w.parts[p].p50.toFixed(1)}/${w.parts[p].p99.toFixed(1)}`.padStart(13);
    console.log([...(BUILDS.length > 1 ? [o.build.padEnd(7)] : []), String(o.streams).padStart(7), String(o.rate).padStart(8), ...parts.map(cell), w.interval.p50.toFixed(1).padStart(9), w.passMs.p50.toFixed(1).padStart(8), w.passCpuMs.p50.toFixed(1).padStart(12)].join(' '));
  }
}
process.exitCode = outcomes.every((o) => o.ok) ? 0 : 1;

/** Forks one process of clients and asks it for what it answers. */
function clients(setup: ClientSetup): { child: ChildProcess; ask: <T>(message: unknown, answer: string) => Promise<T> } {
  const child = fork(new URL('./stream-clients.ts', import.meta.url), [], { execArgv: ['--import', 'tsx'], serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  if (setup.role === 'counted' && NICE !== 0) os.setPriority(child.pid as number, NICE);
  pin(child.pid as number, 'others');
  child.send({ type: 'setup', setup });
  const ask = <T>(message: unknown, answer: string) =>
    new Promise<T>((resolve, reject) => {
      const heard = (m: unknown) => {
        if ((m as { type?: string }).type !== answer) return;
        child.off('message', heard);
        child.off('exit', exited);
        resolve(m as T);
      };
      const exited = (code: number | null) => reject(new Error(`the ${setup.role} clients exited (${code}) before answering ${answer}`));
      child.on('message', heard);
      child.once('exit', exited);
      if (message !== null) child.send(message as object);
    });
  return { child, ask };
}

async function measure(STREAMS: number, RATE: number, SECONDS: number, build: Build): Promise<Omit<Outcome, 'round'>> {
  const { dir, postgres, env } = await benchDatabase('stream');
  const ds = await dataset();
  const values = [...ds.rows(10_000, 7)].map((r) => r.values);
  const traceFile = `${dir}/stream-trace.json`;
  const traceArgs = TRACE ? ['--import', new URL('./support/stream-trace.mjs', import.meta.url).href] : [];
  const service = await startService(TRACE ? { ...env, BENCH_STREAM_TRACE_FILE: traceFile } : env, build.root, traceArgs);
  const pid = service.child.pid as number;
  pin(pid, 'service');
  pin(process.pid, 'others');
  const children: ChildProcess[] = [];
  try {
    await createBenchTable(service.url, 'bench', [{ code: 'sentAt', type: 'number' }]);
    const t0 = now();
    const thirdMs = (SECONDS * 1000) / 3;

    // The streams: the sampled ones opened one at a time between slices of the counted ones.
    const sample = Math.min(SAMPLE, STREAMS);
    const setup = { base: service.url, key: BENCH_KEY, table: 'bench', t0, thirdMs, writes: RATE * SECONDS, trace: TRACE };
    const roles = STREAMS === 0 ? [] : [clients({ ...setup, role: 'sampled', streams: sample }), clients({ ...setup, role: 'counted', streams: STREAMS - sample })];
    children.push(...roles.map((r) => r.child));
    const [sampled, counted] = roles;
    for (let k = 0; k < sample; k++) {
      await sampled.ask({ type: 'open', n: 1 }, 'opened');
      const slice = Math.floor(((k + 1) * (STREAMS - sample)) / sample) - Math.floor((k * (STREAMS - sample)) / sample);
      if (slice > 0) await counted.ask({ type: 'open', n: slice }, 'opened');
    }
    if (sample === 0 && STREAMS > 0) await counted.ask({ type: 'open', n: STREAMS }, 'opened');
    console.log(`\n${STREAMS} streams open (${sample} parsed, ${STREAMS - sample} counted) in ${((now() - t0) / 1000).toFixed(1)} s`);

    // The writes: single-row creates (or bulk creates of BULK rows) at RATE rows a second, from a pool of keep-alive connections.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
    const url = new URL(`${service.url}/api/tables/bench/${BULK === 1 ? 'rows' : 'rows-bulk'}`);
    const writeMs: number[] = [];
    /** When each write was answered (ms after t0), by its row's number. */
    const answeredAt = new Float64Array(RATE * SECONDS).fill(NaN);
    let sent = 0;
    let answered = 0;
    let failed = 0;
    let inFlight = 0;
    let mostInFlight = 0;
    /** Creates rows i to i + n - 1 (one request). */
    const write = (i: number, n: number) => {
      const sentAt = now() - t0;
      const row = (k: number) => ({ id: ds.rowId(k), values: { ...values[k % values.length], sentAt: Math.round(sentAt * 1000) / 1000 } });
      const body = JSON.stringify(BULK === 1 ? row(i) : { data: Array.from({ length: n }, (_, k) => row(i + k)) });
      inFlight++;
      mostInFlight = Math.max(mostInFlight, inFlight);
      const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-api-key': BENCH_KEY } }, (res) => {
        res.resume();
        res.on('end', () => {
          inFlight--;
          if (res.statusCode === 201) {
            answered += n;
            answeredAt.fill(now() - t0, i, i + n);
            writeMs.push(now() - t0 - sentAt);
          } else failed += n;
        });
      });
      req.on('error', () => {
        inFlight--;
        failed += n;
      });
      req.end(body);
    };

    const samples: { at: number; rss: number; anon: number }[] = [];
    const takeSample = () => {
      const m = memory(pid);
      samples.push({ at: now() - t0, rss: m.rss, anon: m.anon });
    };
    const cpus = () => ({ io: writeCalls(pid), service: cpuMs(pid).total, clients: roles.map((r) => cpuMs(r.child.pid as number).total), writer: (process.cpuUsage().user + process.cpuUsage().system) / 1000 });
    const cpu0 = cpus();
    const start = now();
    // The thirds are counted from the first write.
    const shift = start - t0;
    for (const r of roles) r.child.send({ type: 'shift', shift });
    takeSample();
    const sampler = setInterval(takeSample, 500);
    await new Promise<void>((resolve) => {
      const pace = setInterval(() => {
        const elapsed = now() - start;
        const due = Math.min(RATE * SECONDS, Math.floor((elapsed / 1000) * RATE));
        // Whole requests of BULK rows, the rest at the end.
        while (due - sent >= BULK || (sent < due && due === RATE * SECONDS)) {
          const n = Math.min(BULK, due - sent);
          write(sent, n);
          sent += n;
        }
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
    const cpu1 = cpus();
    const writesSampled = samples.length;
    agent.destroy();

    // Every stream should have every write: the clients report once they have, or after 30 s.
    const reports = await Promise.all(roles.map((r) => r.ask<{ report: ClientReport }>({ type: 'expect', rows: answered, waitMs: 30_000, answeredAt }, 'report').then((m) => m.report)));
    clearInterval(sampler);
    const samplerReport = reports[0] as ClientReport | undefined;
    const pct = (ms: number) => (ms / (writeSeconds * 1000)) * 100;
    const serviceCpu = pct(cpu1.service - cpu0.service);
    const clientsCpu = cpu1.clients.map((c, k) => pct(c - cpu0.clients[k]));
    const writerCpu = pct(cpu1.writer - cpu0.writer);
    const events = reports.reduce((s, r) => s + r.events, 0);

    const add = (hs: Uint32Array[]) => {
      const whole = new Uint32Array(BUCKETS);
      for (const h of hs) for (let b = 0; b < h.length; b++) whole[b] += h[b];
      return whole;
    };
    const counts = reports.flatMap((r) => r.counts);
    const short = counts.filter((c) => c < answered).length;
    const extra = counts.filter((c) => c > answered).length;
    const disordered = reports.reduce((s, r) => s + r.disordered, 0);
    const ended = reports.reduce((s, r) => s + r.ended, 0);
    const unstamped = reports.reduce((s, r) => s + r.unstamped, 0);

    const during = samples.slice(0, writesSampled);
    const thirds = [0, 1, 2].map((k) => during.filter((s) => s.at - shift >= k * thirdMs && s.at - shift < (k + 1) * thirdMs + (k === 2 ? 1e9 : 0)));
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
    const anonFirst = mean(thirds[0].map((s) => s.anon));
    const anonMiddle = mean(thirds[1].map((s) => s.anon));
    const anonLast = mean(thirds[2].map((s) => s.anon));
    const sortedWrites = writeMs.sort((a, b) => a - b);
    const wq = (p: number) => sortedWrites[Math.min(sortedWrites.length - 1, Math.floor(p * sortedWrites.length))] ?? NaN;
    const fromCommit = samplerReport ? add(samplerReport.fromCommit) : new Uint32Array(BUCKETS);
    const p50 = quantile(fromCommit, 0.5);
    const p99 = quantile(fromCommit, 0.99);

    console.log(`${postgres ? 'PostgreSQL' : 'SQLite'}: node bin/rowhouse.mjs serve (the build of ${build.root}${BUILDS.length > 1 ? `, ${build.name}` : ''}); load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
    console.log(`${STREAMS} streams on one table; ${RATE} ${BULK === 1 ? 'single-row creates' : `rows created (bulk creates of ${BULK})`}/s asked for ${SECONDS} s: ${answered} answered 201 in ${writeSeconds.toFixed(1)} s (${(answered / writeSeconds).toFixed(0)}/s; sent over ${paceSeconds.toFixed(1)} s), ${failed} failed, at most ${mostInFlight} in flight`);
    console.log(`events delivered: ${events} (${answered} × ${STREAMS} = ${answered * STREAMS} expected), ${((reports.reduce((s, r) => s + r.bytes, 0) / 2 ** 20)).toFixed(0)} MiB`);
    const line = (label: string, h: Uint32Array, max = false) =>
      console.log(`  ${label.padEnd(12)} p50 ${quantile(h, 0.5).toFixed(1).padStart(7)}   p99 ${quantile(h, 0.99).toFixed(1).padStart(7)}${max ? `   max ${quantile(h, 1).toFixed(1).padStart(7)}` : ''}`);
    if (samplerReport) {
      for (const [title, hs] of [
        [`latency from the change's occurredAt (the service's clock when it made the write, before its commit) to the event's arrival, at the ${sample} parsed streams, ms:`, samplerReport.fromCommit],
        [`latency from the write's send (the writer's clock, before the request went out) to the event's arrival, ms:`, samplerReport.fromSend],
      ] as const) {
        console.log(title);
        line('whole run', add(hs), true);
        hs.forEach((t, k) => line(`third ${k + 1}`, t));
      }
      console.log(`latency from the write's answer (a lower bound: events arriving before the answer count as 0) to the arrival at the first parsed stream, ms:`);
      line('whole run', samplerReport.fromAnswer, true);
    }
    console.log(`the write's own latency (answer less send), ms: p50 ${wq(0.5).toFixed(1)}, p99 ${wq(0.99).toFixed(1)}`);
    const syscalls = cpu1.io.calls - cpu0.io.calls;
    console.log(`service write system calls over the writes: ${(syscalls / writeSeconds).toFixed(0)} a second, ${((cpu1.io.bytes - cpu0.io.bytes) / Math.max(1, syscalls) / 1024).toFixed(1)} KiB each`);
    const perEvent = events > 0 ? ` (${(((cpu1.service - cpu0.service) / events) * 1000).toFixed(1)} µs per event delivered, writes included)` : '';
    console.log(`CPU over the writes, % of one core: service ${serviceCpu.toFixed(0)}${perEvent}; writer ${writerCpu.toFixed(0)}; ${roles.map((r, k) => `${r.child === sampled?.child ? 'parsing' : 'counting'} clients ${clientsCpu[k].toFixed(0)}`).join('; ')}`);
    console.log(`service memory (MiB, mean of the samples): RssAnon by third ${anonFirst.toFixed(0)}, ${anonMiddle.toFixed(0)}, ${anonLast.toFixed(0)}; peak RSS ${Math.max(...samples.map((s) => s.rss)).toFixed(0)}`);
    console.log(`  RssAnon every 5 s (then after the writes): ${samples.filter((_, i) => i % 10 === 0).map((s) => s.anon.toFixed(0)).join(' ')}`);
    // The service writes its trace as it exits.
    let traced: Waits | undefined;
    if (TRACE && samplerReport) {
      await service.stop();
      traced = waits(traceFile, samplerReport.trace);
      if (traced) printWaits(traced);
      else console.log('where a change waits: the service traced no round (a build without the trace points?)');
    }

    const budgets: [string, boolean][] = [
      [`every stream got every write once, in order (short ${short}, over ${extra}, out of order ${disordered}, ended by the server ${ended}, unstamped events ${unstamped})`, short + extra + disordered + ended + unstamped === 0],
      [`the writes kept the asked rate (${(answered / writeSeconds).toFixed(0)}/s of ${RATE}/s, at least 95%) and none failed`, answered / writeSeconds >= 0.95 * RATE && failed === 0],
      [`memory does not grow: RssAnon of the last third ${anonLast.toFixed(0)} MiB at most ${GROWTH.ratio}× (and ${GROWTH.mib} MiB over) the middle one's ${anonMiddle.toFixed(0)} MiB${SECONDS < 120 ? ' (a run under 120 s may end before V8\'s first major collection: judge memory on a longer one)' : ''}`, anonLast <= Math.max(anonMiddle * GROWTH.ratio, anonMiddle + GROWTH.mib)],
    ];
    if (!postgres && STREAMS > 0) {
      // Traced, from the commit itself (and the part the service owns, to its socket write, beside it); else from occurredAt, an upper bound.
      const d = traced?.parts.delivery;
      if (d && !Number.isNaN(d.p99)) budgets.push([`p99 latency from the commit to the parse under ${P99_GOAL_MS} ms on SQLite (${d.p99.toFixed(1)} ms; the service's part, to its socket write, ${traced?.parts.service.p99.toFixed(1)} ms)`, d.p99 < P99_GOAL_MS]);
      else budgets.push([`p99 latency under ${P99_GOAL_MS} ms on SQLite (${p99.toFixed(1)} ms from occurredAt)`, p99 < P99_GOAL_MS]);
    }
    console.log('budgets:');
    for (const [what, ok] of budgets) console.log(`  ${ok ? 'PASS' : 'FAIL'}  ${what}`);
    return {
      build: build.name,
      streams: STREAMS,
      rate: RATE,
      answeredPerSecond: answered / writeSeconds,
      failed,
      p50,
      p99,
      serviceCpu,
      serviceCpuMs: (cpu1.service - cpu0.service) / writeSeconds,
      syscallsPerSecond: syscalls / writeSeconds,
      bytesPerSyscall: (cpu1.io.bytes - cpu0.io.bytes) / Math.max(1, syscalls),
      events,
      eventsPerSecond: events / writeSeconds,
      clientsCpu: clientsCpu.reduce((a, b) => a + b, 0),
      writerCpu,
      anonFirst,
      anonMiddle,
      anonLast,
      waits: traced,
      ok: budgets.every(([, ok]) => ok),
    };
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill();
    await service.stop();
    await postgres?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** A process's write system calls so far and the bytes they wrote (/proc/<pid>/io: syscw, wchar; Linux). */
function writeCalls(pid: number): { calls: number; bytes: number } {
  const io = fs.readFileSync(`/proc/${pid}/io`, 'utf8');
  const field = (name: string) => Number(io.match(new RegExp(`^${name}: (\\d+)`, 'm'))?.[1] ?? NaN);
  return { calls: field('syscw'), bytes: field('wchar') };
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
