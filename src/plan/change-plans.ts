import type { HistoryQuery } from '../domain/requests/history-query.ts';
import type { StreamQuery } from '../domain/requests/stream-query.ts';
import type { RowFilter } from '../domain/row-filter.ts';
import type { TableDef } from '../domain/table.ts';
import { filterTables, ownFirst } from './tables-touched.ts';

/** Plans over the change log (issue 31): a table's change stream, and a page of a row's history. */

/** A table's change stream: its log after `position`, the changes the filter keeps, read as a key. */
export interface ChangeStreamPlan {
  kind: 'change-stream';
  tableId: string;
  /** The API key the stream reads as: it ends when the key is revoked, expires or is deleted. */
  keyId: string;
  /** Keeps the changes whose row matches before or after the change; null keeps every change. */
  filter: RowFilter | null;
  /** The tables whose rows it reads: its own, and those its filter's `_some`, `_none` and `_every` reach (the key must keep rows:read on each). */
  reads: string[];
  /** The last sequence the client has: the stream sends what comes after it. */
  position: number;
}

/** The stream the query asks for, from `position` (its `after`, or where a stream without one starts: ChangeLog.startingPoint). */
export function planChangeStream(table: TableDef, q: StreamQuery, keyId: string, position: number): ChangeStreamPlan {
  return { kind: 'change-stream', tableId: table.id, keyId, filter: q.filter, reads: ownFirst(table.id, filterTables(q.filter)), position };
}

/** A page of a row's history: its changes numbered below `before`, newest first, one more than the page to know whether another follows. */
export interface RowHistoryPlan {
  kind: 'row-history';
  tableId: string;
  rowId: string;
  before: number;
  pageSize: number;
}

/** The page the query asks for, up to `readableThrough` (what a reader of the feed may pass now). */
export function planRowHistory(table: TableDef, rowId: string, q: HistoryQuery, readableThrough: number): RowHistoryPlan {
  return { kind: 'row-history', tableId: table.id, rowId, before: Math.min(q.before ?? Number.MAX_SAFE_INTEGER, readableThrough + 1), pageSize: q.pageSize };
}
