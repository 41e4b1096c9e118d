import type { ErrorDetail } from '../errors.ts';
import { invalid } from '../errors.ts';
import { cursorBinding, readCursor, signCursor } from '../cursor.ts';
import { intParam, readQuery } from '../query-string.ts';

/**
 * GET /api/tables/{t}/rows/{rowId}/history?pageSize&cursor (CONTRACT §14): a row's changes, newest
 * first, a page at a time. The cursor is signed and bound to the table and row, and carries the
 * sequence of the last change of its page (the next page holds older ones).
 */

const HISTORY_PARAMS = ['pageSize', 'cursor'] as const;

export interface HistoryQuery {
  pageSize: number;
  /** The page holds changes numbered below this (the cursor's), or the newest when null. */
  before: number | null;
  /** What the next page's cursor is bound to. */
  binding: string;
}

export function parseHistoryQuery(query: Record<string, unknown>, tableId: string, rowId: string, secret: string): HistoryQuery {
  const details: ErrorDetail[] = [];
  const params = readQuery(query, HISTORY_PARAMS, details);
  const pageSize = intParam('pageSize', params.pageSize, 1, 200, 50, details);
  if (details.length > 0) throw invalid(details, 'Invalid history query');
  const binding = cursorBinding(tableId, { history: rowId }, null, ['sequence']);
  let before: number | null = null;
  if (params.cursor !== undefined) {
    const [sequence] = readCursor(secret, params.cursor, binding, 1);
    if (typeof sequence !== 'number' || !Number.isSafeInteger(sequence) || sequence < 1) throw invalid([{ path: 'cursor', message: 'is not valid' }], 'cursor is not valid: use the nextUrl of the previous page as it is');
    before = sequence;
  }
  return { pageSize, before, binding };
}

/** The query string of the page after one that ended with change `sequence`. */
export function nextHistoryQuery(q: HistoryQuery, secret: string, sequence: number): string {
  return new URLSearchParams({ pageSize: String(q.pageSize), cursor: signCursor(secret, q.binding, [sequence]) }).toString();
}
