import type { Run } from './group-commit.ts';

/**
 * SQLite, for the length of an atomic import's transaction (the main connection is the import's
 * alone meanwhile: SQLite writes take turns), two settings of the connection, put back after:
 *
 * - A page cache of 32 MiB instead of the service's 64 MiB. The cache is memory the service keeps;
 *   an import fills it from wherever it stood, at once: a million dataset rows grew the service's
 *   RSS by 62 MiB with the 64 MiB cache (most of it the cache), by 31 to 36 MiB with 32 MiB. A
 *   smaller cache costs system time: the pages of a randomly ordered index (amount: about 12,000
 *   pages at a million rows) that do not fit are spilled to the write-ahead log and read back.
 *   At a million rows (one run each, a busy machine): 3.3 us a row of system time with 64 MiB,
 *   6.0 with 16 MiB, 8.3 with SQLite's default 2 MiB. 32 MiB is half the budget the import's
 *   memory growth is held to (bench/import.ts).
 * - No checkpoint at commit (wal_autocheckpoint 0). The log holds the whole transaction (it cannot
 *   be copied back before the commit; 1.3 GB for a million dataset rows with their change
 *   entries): past 10,000 pages the main connection's backstop checkpoint would copy all of it at
 *   commit, the event loop waiting for seconds. The checkpoint worker (checkpoints.ts),
 *   there to keep checkpoints out of commits, copies it right after, on its own thread.
 *
 * Answers what puts the settings back.
 */
export function importSettings(runNow: Run): () => void {
  const setting = (name: string) => Number(Object.values(runNow(`pragma ${name}`, [])[0] ?? {})[0]);
  const before = { cache_size: setting('cache_size'), wal_autocheckpoint: setting('wal_autocheckpoint') };
  runNow('pragma cache_size = -32768', []);
  runNow('pragma wal_autocheckpoint = 0', []);
  return () => {
    for (const [name, value] of Object.entries(before)) if (Number.isInteger(value)) runNow(`pragma ${name} = ${value}`, []);
  };
}
