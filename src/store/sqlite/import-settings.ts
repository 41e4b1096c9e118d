import type { Run } from './group-commit.ts';

/**
 * SQLite, for the length of an atomic import's transaction (the main connection is the import's
 * alone meanwhile: SQLite writes take turns), two settings of the connection, put back after: a
 * page cache of 32 MiB instead of 64, and no checkpoint at commit (wal_autocheckpoint 0). Why,
 * with the figures: docs/decisions.md, "Import". Answers what puts the settings back.
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
