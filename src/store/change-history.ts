import { readRows } from './database.ts';
import type { Meta, MetaDb } from './meta-schema.ts';
import type { RowHistoryPlan } from '../plan/change-plans.ts';

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

/** A page of a row's history (one more entry than the page: whether another page follows). */
export function historyPage(db: MetaDb, plan: RowHistoryPlan): Promise<Meta['rh_changes'][]> {
  return rowEntriesBefore(db, plan.tableId, plan.rowId, plan.before, plan.pageSize + 1);
}
