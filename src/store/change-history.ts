import { readRows } from './database.ts';
import type { Meta, MetaDb } from './meta-schema.ts';

/**
 * A row's entries in the change log, newest first (issue 31: a row's history, and a change
 * stream's filter, which needs a row's state before an update or delete). By the index
 * rh_changes_row (migration 18): the statement reads `limit` entries of the index and no more.
 */
export async function rowEntriesBefore(db: MetaDb, tableId: string, rowId: string, before: number, limit: number): Promise<Meta['rh_changes'][]> {
  const query = db
    .selectFrom('rh_changes')
    .selectAll()
    .where('tableId', '=', tableId)
    .where('rowId', '=', rowId)
    .where('sequence', '<', before)
    .orderBy('sequence', 'desc')
    .limit(limit)
    .compile();
  return (await readRows(db, query)) as Meta['rh_changes'][];
}
