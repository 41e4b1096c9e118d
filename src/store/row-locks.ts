import type { Db } from './database.ts';

/**
 * Locks the rows of `table` with these ids until the transaction ends, in id order, and answers
 * the ids found. Writers that lock this way never wait for each other in a cycle, and a row found
 * cannot be deleted by another writer before this one is done. PostgreSQL only (callers check
 * `dialect.lockRows`): SQLite runs one write transaction at a time. Ids must be storable text.
 */
export async function lockIds(tx: Db, table: string, ids: readonly string[]): Promise<Set<string>> {
  const sorted = [...new Set(ids)].sort();
  const found = new Set<string>();
  for (let i = 0; i < sorted.length; i += 500) {
    const rows = await tx.selectFrom(table).select('id').where('id', 'in', sorted.slice(i, i + 500)).orderBy('id').forUpdate().execute();
    for (const r of rows) found.add(r.id as string);
  }
  return found;
}
