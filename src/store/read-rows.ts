import type { CompiledQuery } from 'kysely';
import type { Db } from './dialect.ts';

/**
 * SQLite: a synchronous read on the read-only connection, for a query outside any transaction
 * (a Kysely transaction is another object, so it is never found here and reads its own work).
 */
const directReaders = new WeakMap<Db, (sql: string, parameters: readonly unknown[]) => Record<string, unknown>[]>();

/** Sends readRows of `db` (outside transactions) to `read` (SQLite's read connection, sqlite/reads.ts). */
export function readDirectly(db: Db, read: (sql: string, parameters: readonly unknown[]) => Record<string, unknown>[]): void {
  directReaders.set(db, read);
}

/** Runs a compiled SELECT, on SQLite's read connection when outside a transaction. */
export async function readRows(db: Db, query: { sql: string; parameters: readonly unknown[] }): Promise<Record<string, unknown>[]> {
  const direct = directReaders.get(db);
  if (direct) return direct(query.sql, query.parameters);
  return (await db.executeQuery(query as CompiledQuery<Record<string, unknown>>)).rows;
}

