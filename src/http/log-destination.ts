import pino from 'pino';

/**
 * Where the service's log goes when it runs as a process (`rowhouse serve`): standard output,
 * through a buffer (issue 27). pino's default destination makes one write(2) per line; at info,
 * with one access line per request, that was a system call (and a wake-up of whatever reads the
 * pipe) per request. Here lines gather in a string and go out together:
 *
 * - when MIN_BYTES are waiting (about 16 access lines), in one synchronous write;
 * - at the latest FLUSH_MS after the first line waiting, so a quiet service's lines show at once;
 * - at once for a line at warn or above, with every line before it (a fault is never held back);
 * - when the app closes, and on the process's `exit` event, which `process.exit` (a shutdown on
 *   SIGTERM or SIGINT, and its deadline) and a fatal uncaught exception both emit.
 *
 * What is lost: a SIGKILL (or a crash of Node itself) loses the info lines still waiting, at most
 * MIN_BYTES or FLUSH_MS of them. Writes stay synchronous: a reader that falls behind until the pipe
 * is full slows the service down (as before) rather than lines being dropped or held in memory.
 */

/** The lines waiting are written out when they reach this many characters… */
export const MIN_BYTES = 4096;
/** …and at the latest this long (ms) after the first of them. */
export const FLUSH_MS = 100;
/** pino's number of warn: a line at this level or above is written at once. */
const WARN = 40;

/** A pino destination: lines gathered here, written through sonic-boom (pino's own destination, synchronous). */
export class BufferedLog {
  /** The level of the line being written: pino sets it before each write, as the destination asks (below). */
  lastLevel = 0;
  private pending = '';
  private timer: NodeJS.Timeout | null = null;
  private readonly out: ReturnType<typeof pino.destination>;

  constructor(fd: number) {
    // minLength 0: each write below is one write(2) (sonic-boom retries it while the pipe is full).
    // Handed bytes (contentMode 'buffer'): given a string, sonic-boom measures it, encodes it for
    // the write and then encodes it again to drop what was written; the lines are encoded once here.
    this.out = pino.destination({ dest: fd, sync: true, minLength: 0, contentMode: 'buffer' });
    (this as unknown as Record<symbol, boolean>)[Symbol.for('pino.metadata')] = true;
  }

  write(line: string): void {
    this.pending += line;
    if (this.lastLevel >= WARN || this.pending.length >= MIN_BYTES) this.flush();
    else if (this.timer === null) {
      this.timer = setTimeout(this.flush, FLUSH_MS);
      this.timer.unref();
    }
  }

  /** Writes out every line waiting, if any. */
  readonly flush = (): void => {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.pending === '') return;
    const text = this.pending;
    this.pending = '';
    // (sonic-boom's types name only strings; in contentMode 'buffer' it takes bytes.)
    this.out.write(Buffer.from(text) as unknown as string);
  };
}

let stdoutLog: BufferedLog | null = null;

/** The process's one log on standard output, flushed when the process exits. */
export function standardOutputLog(): BufferedLog {
  if (stdoutLog === null) {
    const log = new BufferedLog(1);
    process.once('exit', log.flush);
    stdoutLog = log;
  }
  return stdoutLog;
}
