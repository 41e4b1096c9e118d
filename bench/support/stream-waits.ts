// Where a change's time goes between its commit and the client's parse (bench/stream.ts with
// BENCH_STREAM_TRACE): the service's rounds (bench/support/stream-trace.mjs, loaded into it)
// joined with what the parsed clients noted of each event (ClientReport.trace), by sequence and by
// the client's port. One clock across the processes (ms since the epoch, performance.timeOrigin +
// performance.now()); occurredAt is whole milliseconds (an error under 1 ms in the first two parts).
import fs from 'node:fs';
import type { RoundTrace } from '../../src/stream/round-trace.ts';

/** A round as bench/support/stream-trace.mjs keeps it: the service's trace, with its streams counted rather than listed. */
type Round = Omit<RoundTrace, 'table' | 'ports' | 'writes'> & { written: number };

/** The parts, in order: each event's time in it, ms. */
export const PARTS = [
  ['write', "occurredAt to the commit (the write's own work)"],
  ['round', "the commit to its round's read (the wait for the round)"],
  ['read', 'the read of the log'],
  ['text', "the read's event text made"],
  ['pass', "the stream's place in the round's writes (the streams written before it)"],
  ['arrival', "the socket write to the client's parse (the kernel, the client process's turn for a core, its event loop)"],
  ['total', 'occurredAt to the parse'],
  ['service', "the commit to the stream's socket write (round + read + text + pass: the service's part)"],
  ['delivery', 'the commit to the parse (the goal\'s figure)'],
] as const;
export type Part = (typeof PARTS)[number][0];

export interface Waits {
  /** Per part: p50, mean and p99, ms. */
  parts: Record<Part, { p50: number; mean: number; p99: number }>;
  /** Events joined with a round and a write to their stream, of the events traced. */
  joined: number;
  traced: number;
  /** Between two reads, and a round's writes from first to last, ms: p50 and p99. */
  interval: { p50: number; p99: number };
  passMs: { p50: number; p99: number };
  /** The CPU of a round's writes (the service's reckoning of its rounds), ms: p50 and p99. */
  passCpuMs: { p50: number; p99: number };
  /** Streams written a round (the most). */
  written: number;
}

export function waits(traceFile: string, events: Float64Array): Waits | undefined {
  if (!fs.existsSync(traceFile)) return undefined;
  const { rounds, writes } = JSON.parse(fs.readFileSync(traceFile, 'utf8')) as { rounds: Round[]; writes: Record<string, number[]> };
  if (rounds.length === 0) return undefined;
  // By port: the last sequence of each write, and when it returned.
  const byPort = new Map(Object.entries(writes).map(([port, pairs]) => [Number(port), new Map(pairs.flatMap((v, k) => (k % 2 === 0 ? [[v, pairs[k + 1]] as const] : [])))]));
  const values: Record<Part, number[]> = { write: [], round: [], read: [], text: [], pass: [], arrival: [], total: [], service: [], delivery: [] };
  let joined = 0;
  for (let k = 0; k + 3 < events.length; k += 4) {
    const [port, sequence, arrival, occurredAt] = [events[k], events[k + 1], events[k + 2], events[k + 3]];
    const r = roundOf(rounds, sequence);
    const written = r && byPort.get(port)?.get(r.last);
    if (!r || written === undefined) continue;
    joined++;
    // A commit a single-row write: the round's commits are its entries, in order.
    const commit = r.commits.length === r.last - r.after ? r.commits[sequence - r.after - 1] : NaN;
    if (!Number.isNaN(commit)) {
      values.write.push(commit - occurredAt);
      values.round.push(r.readStart - commit);
      values.service.push(written - commit);
      values.delivery.push(arrival - commit);
    }
    values.read.push(r.readEnd - r.readStart);
    values.text.push(r.textEnd - r.readEnd);
    values.pass.push(written - r.textEnd);
    values.arrival.push(arrival - written);
    values.total.push(arrival - occurredAt);
  }
  const stats = (xs: number[]) => {
    const s = xs.slice().sort((a, b) => a - b);
    const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? NaN;
    return { p50: q(0.5), mean: s.reduce((a, b) => a + b, 0) / Math.max(1, s.length), p99: q(0.99) };
  };
  const parts = Object.fromEntries(PARTS.map(([p]) => [p, stats(values[p])])) as Waits['parts'];
  const busy = rounds.filter((r) => r.written > 0);
  const interval = stats(busy.slice(1).map((r, k) => r.readStart - busy[k].readStart));
  const passMs = stats(busy.map((r) => r.passEnd - r.textEnd));
  const passCpuMs = stats(busy.map((r) => r.passCpuMs));
  return { parts, joined, traced: events.length / 4, interval: { p50: interval.p50, p99: interval.p99 }, passMs: { p50: passMs.p50, p99: passMs.p99 }, passCpuMs: { p50: passCpuMs.p50, p99: passCpuMs.p99 }, written: Math.max(...rounds.map((r) => r.written)) };
}

/** The round whose read held the sequence (rounds in order of their reads). */
function roundOf(rounds: Round[], sequence: number): Round | undefined {
  let lo = 0;
  let hi = rounds.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const r = rounds[mid];
    if (sequence <= r.after) hi = mid - 1;
    else if (sequence > r.last) lo = mid + 1;
    else return r;
  }
  return undefined;
}

export function printWaits(w: Waits): void {
  console.log(`where a change waits (the parsed streams' events joined with the service's rounds: ${w.joined} of ${w.traced}), ms:`);
  for (const [p, what] of PARTS) {
    const s = w.parts[p];
    console.log(`  ${p.padEnd(8)} p50 ${s.p50.toFixed(1).padStart(6)}  mean ${s.mean.toFixed(1).padStart(6)}  p99 ${s.p99.toFixed(1).padStart(6)}   ${what}`);
  }
  console.log(`  rounds: ${w.interval.p50.toFixed(1)} ms between reads (p99 ${w.interval.p99.toFixed(1)}); the writes of a round, first to last, ${w.passMs.p50.toFixed(1)} ms (p99 ${w.passMs.p99.toFixed(1)}), ${w.passCpuMs.p50.toFixed(1)} ms of CPU (p99 ${w.passCpuMs.p99.toFixed(1)}), to ${w.written} streams at most`);
}
