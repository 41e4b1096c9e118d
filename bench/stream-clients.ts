// The clients of bench/stream.ts, in processes of their own (forked by it, one per role), so that
// their CPU is theirs and not the writer's or the service's, and is printed apart:
//
// - `sampled`: a few streams (BENCH_STREAM_SAMPLE, default 20, spread over the order the streams
//   open in) parse every event fully: its id (each must be above the one before), its `sentAt` and
//   `occurredAt`, for the latencies; the first of them also notes when each row arrived, for the
//   latency from the write's answer.
// - `counted`: all the others. Each is a real connection that really reads every byte the service
//   sends it (so the service does the whole fan-out, and its backpressure is real), but reads only
//   its events' sequences, from the raw socket: no HTTP client, no text decoding, no 'data' event
//   (each read lands in one buffer all of them share, `onread`); a search of the bytes for the line
//   every event begins with (`id: <sequence>`, Buffer.indexOf), its digits read as a number, each
//   above the one before, and counted. A million events a second parsed in JavaScript would take
//   more than the two cores the service runs on.
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
  /** Sampled only: note each event's port, sequence, arrival and occurredAt (ClientReport.trace). */
  trace?: boolean;
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
  /** Streams that got an id not above the one before (a repeat or an out-of-order change). */
  disordered: number;
  /** Streams the server ended. */
  ended: number;
  /** Events without a sentAt (not the bench's); sampled only. */
  unstamped: number;
  /** Sampled, with `trace`: per event, the stream's local port, its sequence, when it arrived and its occurredAt (ms since the epoch). */
  trace: Float64Array;
}

type Message = { type: 'setup'; setup: ClientSetup } | { type: 'open'; n: number } | { type: 'shift'; shift: number } | { type: 'expect'; rows: number; waitMs: number; answeredAt: Float64Array };

export function bucket(ms: number): number {
  return Math.min(BUCKETS - 1, Math.max(0, Math.floor(ms / BUCKET_MS)));
}

/** Every event's first line, `id: <sequence>`, after the blank line that ended what came before. */
const ID = Buffer.from('\nid: ');
const NEWLINE = 10;
/** An id line's bytes at most (the needle, a sequence's digits, its newline). */
const ID_LINE = ID.length + 17;
/**
 * The counted streams' one read buffer: a socket's read lands in it and is scanned before the next
 * read (net.connect's `onread`: no 'data' event, no Buffer allocated a read).
 */
const READ_BUFFER = Buffer.allocUnsafe(256 * 1024);
/** The unfinished end of a stream's last read and the start of its next, scanned together. */
const JOINT = Buffer.allocUnsafe(3 * ID_LINE);

/**
 * Finds each event's sequence in a stream's reads as they come, whatever bytes a read begins or
 * ends with: a search of the bytes for the id lines (Buffer.indexOf), its digits read as numbers,
 * no text decoded. What a read ends with that may begin an id line (a part of the needle, a line
 * without its newline) is kept, and read again with the next read's first bytes.
 */
export class IdScanner {
  private readonly carry = Buffer.allocUnsafe(2 * ID_LINE);
  private carried = 0;

  constructor(private readonly seen: (sequence: number) => void) {}

  scan(data: Buffer): void {
    let from = 0;
    if (this.carried > 0) {
      const kept = this.carried;
      this.carried = 0;
      this.carry.copy(JOINT, 0, 0, kept);
      // A read this short is scanned with what was kept, as one.
      if (data.length <= ID_LINE) {
        this.scan(JOINT.subarray(0, kept + data.copy(JOINT, kept)));
        return;
      }
      const joint = JOINT.subarray(0, kept + data.copy(JOINT, kept, 0, Math.min(data.length, ID_LINE)));
      const at = joint.indexOf(ID);
      // Only a line that begins in what was kept (whole in the joint, which holds a line's length
      // of this read): one that begins in this read is found below.
      if (at >= 0 && at < kept) {
        const end = this.line(joint, at);
        if (end < 0) return;
        from = end - kept;
      }
    }
    for (let at = data.indexOf(ID, from); at >= 0; at = data.indexOf(ID, from)) {
      const end = this.line(data, at);
      if (end < 0) return;
      from = end;
    }
    // The end of the read may begin the next id line.
    this.keep(data, Math.max(from, data.length - (ID.length - 1)));
  }

  /** Reads the id line at `at`: where its newline is, or -1 (it is kept) when the bytes end before it. */
  private line(bytes: Buffer, at: number): number {
    let sequence = 0;
    let k = at + ID.length;
    for (; k < bytes.length && bytes[k] !== NEWLINE; k++) sequence = sequence * 10 + (bytes[k] - 48);
    if (k === bytes.length) {
      this.keep(bytes, at);
      return -1;
    }
    this.seen(sequence);
    return k;
  }

  private keep(bytes: Buffer, from: number): void {
    this.carried = bytes.copy(this.carry, 0, from, Math.min(bytes.length, from + this.carry.length));
  }
}

async function run(setup: ClientSetup): Promise<void> {
  const sampled = setup.role === 'sampled';
  const fromSend = [0, 1, 2].map(() => new Uint32Array(sampled ? BUCKETS : 1));
  const fromCommit = [0, 1, 2].map(() => new Uint32Array(sampled ? BUCKETS : 1));
  const fromAnswer = new Uint32Array(sampled ? BUCKETS : 1);
  const counts = new Array<number>(setup.streams).fill(0);
  const report: ClientReport = { role: setup.role, fromSend, fromCommit, fromAnswer, events: 0, bytes: 0, counts, disordered: 0, ended: 0, unstamped: 0, trace: new Float64Array(0) };
  const traced: number[] = [];
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
        const port = res.socket.localPort ?? 0;
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
                const occurredAt = Date.parse(text.slice(o + 14, o + 38));
                fromCommit[third][bucket(at + setup.t0 - occurredAt)]++;
                if (setup.trace) traced.push(port, id, at + setup.t0, occurredAt);
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

  /**
   * A stream whose events' sequences are only checked (each above the one before) and counted, on
   * the raw socket, read into one shared buffer (the answer's head passes through unread).
   */
  const counted = (i: number) =>
    new Promise<void>((resolve, reject) => {
      let head = '';
      let opened = false;
      let closing = false;
      const ids = new IdScanner((sequence) => {
        if (!(sequence > lastIds[i])) disordered.add(i);
        lastIds[i] = sequence;
        counts[i]++;
        report.events++;
      });
      const socket = net.connect({
        port: Number(url.port),
        host: url.hostname,
        onread: {
          buffer: READ_BUFFER,
          // Answers whether to read on (false would pause the socket).
          callback: (nread: number, buffer: Uint8Array): boolean => {
            const data = (buffer as Buffer).subarray(0, nread);
            report.bytes += nread;
            if (!opened) {
              head += data.toString('latin1');
              if (!head.startsWith('HTTP/1.1 200'.slice(0, head.length))) {
                reject(new Error(`stream ${i}: ${head.slice(0, 40)}`));
                socket.destroy();
                return false;
              }
              if (head.includes('\n: open\n')) {
                opened = true;
                head = '';
                resolve();
              }
            }
            const before = counts[i];
            ids.scan(data);
            if (counts[i] > before && counts[i] >= expected) check();
            return true;
          },
        },
      });
      socket.on('connect', () => {
        socket.write(`GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\nX-API-Key: ${setup.key}\r\nConnection: close\r\n\r\n`);
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
      report.trace = Float64Array.from(traced);
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
