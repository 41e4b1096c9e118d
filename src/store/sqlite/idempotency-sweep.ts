import { sql } from 'kysely';
import type { Db } from '../dialect.ts';

/** Records a statement of the sweep looks at: a short write, among the service's own. */
const BATCH = 1000;
/** Batches a sweep looks at past the expired head of the table (see below). */
const FURTHER = 10;

/**
 * The sweep of expired kept answers (rh_idempotency) on SQLite, which has no index on `expiresAt`
 * (migration 19: keeping it cost every idempotent create a third B-tree): the table is walked in
 * rowid order, which is the order records were inserted in (a new rowid is above every rowid
 * there is), a batch of BATCH records per statement.
 *
 * With one time to live, the order of insertion is the order of expiry, and the expired records
 * are the table's head: the walk deletes batch after batch from the oldest, and stops at the
 * first batch with none expired. Three things put a record out of that order: the time to live
 * shortened at a restart (newer records expire before older ones), a key's expired record taken
 * over in place by a new answer (IdempotencyStore.keep's upsert: an old rowid, a new expiry), and
 * the clock set back. So each sweep also looks at FURTHER batches past where the last one left off,
 * going round the table: every expired record is deleted within (records / BATCH / FURTHER)
 * sweeps whatever its place, and in the usual case by the first walk. A record expired but not
 * yet swept is never answered (it is read only unexpired) and gives way to its key's next request.
 * Statements through the query builder: each waits for the connection, as any write.
 */
export function sqliteIdempotencySweep(db: Db): (now: string) => Promise<number> {
  /** The rowid after which the next sweep's further batches begin. */
  let further = 0;
  /** Deletes the expired records of the BATCH after rowid `after`: where the batch ends, and how many; null: none there. */
  const batch = async (after: number, now: string): Promise<{ end: number; deleted: number } | null> => {
    const { rows } = await sql<{ end: number | null }>`select max(id) as "end" from (select rowid as id from rh_idempotency where rowid > ${after} order by rowid limit ${BATCH})`.execute(db);
    const end = rows[0]?.end ?? null;
    if (end === null) return null;
    const done = await sql`delete from rh_idempotency where rowid > ${after} and rowid <= ${end} and "expiresAt" <= ${now}`.execute(db);
    return { end: Number(end), deleted: Number(done.numAffectedRows ?? 0) };
  };
  return async (now) => {
    let deleted = 0;
    for (let after = 0; ; ) {
      const b = await batch(after, now);
      if (!b) break;
      deleted += b.deleted;
      if (b.deleted === 0) break;
      after = b.end;
    }
    for (let i = 0; i < FURTHER; i++) {
      const b = await batch(further, now);
      if (b) {
        deleted += b.deleted;
        further = b.end;
      } else if (further === 0) break;
      // Round the table's end: on from its start.
      else further = 0;
    }
    return deleted;
  };
}
