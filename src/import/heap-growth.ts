import v8 from 'node:v8';

/**
 * While any import runs, V8 lets its old space grow to twice what was live at the last full
 * collection (--heap-growing-percent=100), instead of up to four times at a high allocation rate.
 * An import promotes most of its rows' objects (each chunk outlives a scavenge while the next is
 * read), all garbage soon after: a million rows on PostgreSQL left about 27 MB live after each
 * full collection while the heap grew to 110-138 MB in between, 93 MiB of RSS growth. Bounded
 * this way, 31.7 MiB, at about 10% more CPU per row (bench/import.ts: 22.9 µs against 20.2).
 * Requests are not charged for it: set for good, get by id took 4% more CPU. V8 reads the flag
 * each time it sets the next limit. The flag is put back to 0, V8's default, when the last
 * import ends. A value the operator gave the process is theirs: then the flag is never touched.
 */
let running = 0;

/**
 * The flag's value as given to the process, in NODE_OPTIONS or on its command line; null when none
 * was. Node reads NODE_OPTIONS first, so the command line's last value is the one in force.
 */
export function givenHeapGrowing(execArgv: readonly string[], nodeOptions = ''): number | null {
  const given = [nodeOptions, ...execArgv].join(' ');
  const values = [...given.matchAll(/--heap[-_]growing[-_]percent(?:=|\s+)(\d+)/g)];
  return values.length === 0 ? null : Number(values[values.length - 1][1]);
}

const OPERATOR_VALUE = givenHeapGrowing(process.execArgv, process.env.NODE_OPTIONS);

export async function withBoundedHeapGrowth<T>(work: () => Promise<T>): Promise<T> {
  if (OPERATOR_VALUE !== null) return work();
  if (running++ === 0) v8.setFlagsFromString('--heap-growing-percent=100');
  try {
    return await work();
  } finally {
    if (--running === 0) v8.setFlagsFromString('--heap-growing-percent=0');
  }
}
