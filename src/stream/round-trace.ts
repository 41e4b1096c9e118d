import diagnostics_channel from 'node:diagnostics_channel';

/**
 * Where a change waits between its commit and its socket write, round by round, for whoever
 * listens (bench/stream.ts, with BENCH_STREAM_TRACE, loads bench/support/stream-trace.mjs into the
 * service, which subscribes). Published only while something subscribes: with no subscriber, a
 * round costs one `hasSubscribers` look. Times are ms since the epoch (performance.timeOrigin +
 * performance.now(): one clock across the processes of a machine).
 */
export interface RoundTrace {
  table: string;
  /** The read's entries are numbered after `after`, up to `last`. */
  after: number;
  last: number;
  /** When each commit of this instance that woke the reader since its last read came (one a single-row write). */
  commits: number[];
  /** The read of the log began, and ended. */
  readStart: number;
  readEnd: number;
  /** The read's event text was made (its first stream's turn). */
  textEnd: number;
  /** Each unfiltered live stream written this round: its client's port, and when its write returned. */
  ports: number[];
  writes: number[];
  /** The last write returned. */
  passEnd: number;
  /** The CPU the writes took, ms (what the round's length is reckoned from). */
  passCpuMs: number;
}

export const roundTrace = diagnostics_channel.channel('rowhouse:change-streams:round');

export const traceNow = (): number => performance.timeOrigin + performance.now();
