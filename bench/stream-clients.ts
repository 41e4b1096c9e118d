// The clients of bench/stream.ts, in processes of their own (forked by it, one per role), so that
// their CPU is theirs and not the writer's or the service's, and is printed apart:
//
// - `sampled`: a few streams (BENCH_STREAM_SAMPLE, default 20, spread over the order the streams
//   open in) parse every event fully: its id (each must be above the one before), its `sentAt` and
//   `occurredAt`, for the latencies; the first of them also notes when each row arrived, for the
//   latency from the write's answer.
// - `counted`: all the others. Each is a real connection that really reads every byte the service
//   sends it (so the service does the whole fan-out, and its backpressure is real), but counts its
//   events only, from the raw socket: no HTTP client, no text decoding, no parsing; a search of the
//   bytes for the line every event has (`event: change`) with Buffer.indexOf. A million events a
//   second parsed in JavaScript would take more than the two cores the service runs on.
//
// Protocol (IPC, advanced serialization): the parent sends {setup}, then {type:'open', n} as many
// times as it takes, the child answering {type:'opened'} once n more of its streams are open; the parent sends {type:'shift'} (when the writes began) and, once the
// writes are over, {type:'expect', rows, waitMs, answeredAt}; the child answers {type:'report'} when
// every stream has `rows` events or after waitMs.
import http from 'node:http';
import net from 'node:net';
import { pathToFileURL } from 'node:url';

/** Latency histogram: buckets of 0.1 ms up to 30 s (beyond: the last). */
export const BUCKET_MS = 0.1;
export const BUCKETS = 300_000;
const now = () => performance.timeOrigin + performance.now();

export interface ClientSetup {
  role: 'sampled' | 'counted';
  base: string;
  key: string;
  table: string;
  /** How many streams this process opens. */
  streams: number;
  t0: number;
  thirdMs: number;
  /** How many writes at most (the rows' ids count from 0). */
  writes: number;
}

export interface ClientReport {
  role: ClientSetup['role'];
  /** Sampled only: latency from the send, a histogram per third of the run (by send time); then from the change's occurredAt. */
  fromSend: Uint32Array[];
  fromCommit: Uint32Array[];
  /** Sampled only: latency from the write's answer, at the first stream: a lower bound. */
  fromAnswer: Uint32Array;
  events: number;
  bytes: number;
  /** Per stream: events received. */
  counts: number[];
  /** Streams that got an id not above the one before (a repeat or an out-of-order change); sampled only. */
  disordered: number;
  /** Streams the server ended. */
  ended: number;
  /** Events without a sentAt (not the bench's); sampled only. */
  unstamped: number;
}

type Message = { type: 'setup'; setup: ClientSetup } | { type: 'open'; n: number } | { type: 'shift'; shift: number } | { type: 'expect'; rows: number; waitMs: number; answeredAt: Float64Array };

export function bucket(ms: number): number {
  return Math.min(BUCKETS - 1, Math.max(0, Math.floor(ms / BUCKET_MS)));
}

const EVENT = Buffer.from('\nevent: change\n');
const OPEN = Buffer.from('\n: open\n');

/** How many times `needle` occurs in `chunk`, and in the bytes that straddle `tail` (the previous chunk's end) and it. */
function occurrences(needle: Buffer, tail: Buffer, chunk: Buffer): number {
  let n = 0;
  for (let at = chunk.indexOf(needle); at >= 0; at = chunk.indexOf(needle, at + needle.length)) n++;
  if (tail.length > 0) {
    const joint = Buffer.concat([tail, chunk.subarray(0, needle.length - 1)]);
    // Only a match that begins in the tail and ends in the chunk: the tail alone is shorter than the needle.
    const at = joint.indexOf(needle);
    if (at >= 0 && at < tail.length && at + needle.length > tail.length) n++;
  }
  return n;
}

async function run(setup: ClientSetup): Promise<void> {
  const sampled = setup.role === 'sampled';
  const fromSend = [0, 1, 2].map(() => new Uint32Array(sampled ? BUCKETS : 1));
  const fromCommit = [0, 1, 2].map(() => new Uint32Array(sampled ? BUCKETS : 1));
  const fromAnswer = new Uint32Array(sampled ? BUCKETS : 1);
  const counts = new Array<number>(setup.streams).fill(0);
  const report: ClientReport = { role: setup.role, fromSend, fromCommit, fromAnswer, events: 0, bytes: 0, counts, disordered: 0, ended: 0, unstamped: 0 };
  const lastIds = new Array<number>(setup.streams).fill(0);
  const disordered = new Set<number>();
  /** When each change arrived at the first stream, by the row's number (its id's last 12 hex digits, less one). */
  const firstArrivals = new Float64Array(sampled ? setup.writes : 0).fill(NaN);
  const closers: (() => void)[] = [];
  let expected = Infinity;
  /** When the first write was sent (ms after t0): the thirds of the run count from it. */
  let shift = 0;
  let done: () => void = () => {};
  const finished = new Promise<void>((resolve) => (done = resolve));
  const check = () => {
    if (counts.every((c) => c >= expected)) done();
  };
  const agent = new http.Agent({ keepAlive: false, maxSockets: setup.streams });
  const url = new URL(`${setup.base}/api/tables/${setup.table}/changes/stream`);

  /** A stream parsed fully (an HTTP client, decoded text, every event's fields). */
  const parsed = (i: number) =>
    new Promise<void>((resolve, reject) => {
      const req = http.get(url, { agent, headers: { accept: 'text/event-stream', 'x-api-key': setup.key } }, (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`stream ${i}: ${res.statusCode}`));
          return;
        }
        res.setEncoding('utf8');
        let rest = '';
        let opened = false;
        res.on('data', (chunk: string) => {
          const at = now() - setup.t0;
          report.bytes += Buffer.byteLength(chunk);
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
                fromSend[third][bucket(at - sent)]++;
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
      closers.push(() => req.destroy());
    });

  /** A stream whose events are only counted, on the raw socket (the answer's head and chunk sizes pass through unread). */
  const counted = (i: number) =>
    new Promise<void>((resolve, reject) => {
      const socket = net.connect(Number(url.port), url.hostname);
      let head = true;
      let opened = false;
      let tail = Buffer.alloc(0);
      let closing = false;
      socket.on('connect', () => {
        socket.write(`GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\nX-API-Key: ${setup.key}\r\nConnection: close\r\n\r\n`);
      });
      socket.on('data', (chunk: Buffer) => {
        report.bytes += chunk.length;
        if (head) {
          head = false;
          if (!chunk.subarray(0, 12).toString('latin1').startsWith('HTTP/1.1 200')) {
            reject(new Error(`stream ${i}: ${chunk.subarray(0, 40).toString('latin1')}`));
            socket.destroy();
            return;
          }
        }
        if (!opened && occurrences(OPEN, tail, chunk) > 0) {
          opened = true;
          resolve();
        }
        const n = occurrences(EVENT, tail, chunk);
        counts[i] += n;
        report.events += n;
        tail = Buffer.from(chunk.subarray(Math.max(0, chunk.length - (EVENT.length - 1))));
        if (n > 0 && counts[i] >= expected) check();
      });
      socket.on('end', () => {
        if (!closing) report.ended++;
      });
      socket.on('error', (err) => {
        if (!opened) reject(err);
      });
      closers.push(() => {
        closing = true;
        socket.destroy();
      });
    });

  // Opened when the parent says, so many at a time (it interleaves the two roles' streams so that the
  // sampled ones are spread over the order the service met them in), 50 at once (the server's listen backlog is 511).
  const open = sampled ? parsed : counted;
  let opened = 0;
  const openMore = async (n: number) => {
    const upTo = Math.min(setup.streams, opened + n);
    while (opened < upTo) {
      const first = opened;
      opened = Math.min(upTo, opened + 50);
      await Promise.all(Array.from({ length: opened - first }, (_, k) => open(first + k)));
    }
    process.send?.({ type: 'opened' });
  };

  process.on('message', (message: unknown) => {
    const m = message as Message;
    if (m.type === 'open') {
      openMore(m.n).catch((err: Error) => {
        console.error(err);
        process.exit(1);
      });
      return;
    }
    if (m.type === 'shift') {
      shift = m.shift;
      return;
    }
    if (m.type !== 'expect') return;
    expected = m.rows;
    check();
    const timer = setTimeout(done, m.waitMs);
    void finished.then(() => {
      clearTimeout(timer);
      report.disordered = disordered.size;
      for (let row = 0; row < firstArrivals.length; row++) {
        if (!Number.isNaN(firstArrivals[row]) && !Number.isNaN(m.answeredAt[row])) fromAnswer[bucket(firstArrivals[row] - m.answeredAt[row])]++;
      }
      for (const close of closers) close();
      agent.destroy();
      process.send?.({ type: 'report', report }, () => process.exit(0));
    });
  });
}

// Run as a process of clients (forked by bench/stream.ts), not when bench/stream.ts imports its types and constants.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.once('message', (message: unknown) => {
    const m = message as Message;
    if (m.type !== 'setup') throw new Error(`expected the setup first, got ${m.type}`);
    run(m.setup).catch((err: Error) => {
      console.error(err);
      process.exit(1);
    });
  });
}
