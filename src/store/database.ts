import type { Database, DatabaseOptions, Db } from './dialect.ts';
import { loadPg } from './postgres/driver.ts';
import { openPostgres } from './postgres/open-postgres.ts';
import { openSqlite } from './sqlite/open-sqlite.ts';
import { classifyDatabaseError } from './database-errors.ts';
import { type TransactionHooks, attachHooks, heldScope, hooksOf, newHooks } from './transaction-hooks.ts';

export type { Database, DatabaseOptions, Db } from './dialect.ts';
export { readRows } from './read-rows.ts';

const MAX_ATTEMPTS = 5;

/**
 * Every write runs here: one transaction. Concurrent requests may take row locks in opposite
 * orders; PostgreSQL then aborts one of them, which is run again from the start. (SQLite runs
 * one transaction at a time, so it never needs to.)
 */
export async function inTransaction<T>(database: Database, work: (tx: Db) => Promise<T>): Promise<T> {
  const held = heldScope.getStore();
  if (held?.open) return held.run(work);
  return runTransaction(database, work);
}

/** A transaction of its own (inTransaction outside a request's held transaction). */
async function runTransaction<T>(database: Database, work: (tx: Db) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const hooks = newHooks();
    try {
      const result = await database.db.transaction().execute(async (tx) => {
        attachHooks(tx, hooks);
        const done = await work(tx);
        await runBeforeCommit(hooks);
        return done;
      });
      for (const then of hooks.afterCommit) then();
      return result;
    } catch (err) {
      if (!(await retryable(database, err, attempt))) throw err;
    }
  }
}

/** Work that registers more before-commit work (rare) is run too, in order. */
export async function runBeforeCommit(hooks: TransactionHooks): Promise<void> {
  for (let i = 0; i < hooks.beforeCommit.length; i++) await hooks.beforeCommit[i]();
}

/** Whether a failed attempt is to be made again: the database gave up on it because of other writers, and attempts are left (after a moment's random wait). */
export async function retryable(database: Database, err: unknown, attempt: number): Promise<boolean> {
  if (attempt >= MAX_ATTEMPTS || classifyDatabaseError(err, database.dialect) !== 'retryable') return false;
  // A moment's random wait, so the two that collided do not collide again at once.
  await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * attempt));
  return true;
}

/**
 * Runs `then` once the transaction `tx` has committed (never after a rollback); outside a
 * transaction (each statement commits by itself), at once. For work that must not happen unless
 * the change is there to stay, like deleting the bytes of a file the change let go of.
 */
export function afterCommit(tx: Db, then: () => void): void {
  const hooks = hooksOf(tx);
  if (hooks) hooks.afterCommit.push(then);
  else if (tx.isTransaction) throw new Error('afterCommit: a transaction not begun by inTransaction');
  else then();
}

/**
 * Runs `last` in the transaction `tx` after its work, just before it commits: for statements
 * that are best made once per transaction, as late as possible (the change log takes its
 * sequence numbers there, holding its lock for no longer than the commit). `tx` must be a
 * transaction begun by inTransaction.
 */
export function beforeCommit(tx: Db, last: () => Promise<void>): void {
  const hooks = hooksOf(tx);
  if (!hooks) throw new Error('beforeCommit: a transaction not begun by inTransaction');
  hooks.beforeCommit.push(last);
}

/**
 * Only the driver the URL names is loaded: a SQLite service never pays for pg's start and memory,
 * nor a PostgreSQL one for better-sqlite3's.
 */
export async function openDatabase(databaseUrl: string, options: DatabaseOptions = {}): Promise<Database> {
  if (databaseUrl.startsWith('sqlite:')) {
    const { default: SqliteDatabase } = await import('better-sqlite3');
    return openSqlite(SqliteDatabase, databaseUrl.slice('sqlite:'.length));
  }
  return openPostgres(await loadPg(), databaseUrl, options);
}
