import type { ErrorDetail } from '../errors.ts';
import { jsonParam } from './query-string.ts';
import type { FieldLookup } from './row-columns.ts';
import { type RowFilter, parseRowFilter } from './row-filter.ts';
import { type SortKey, effectiveSort, parseRowSort } from './row-sort.ts';

/**
 * The query string of a row list or export, read into typed values. Every reader adds its
 * problems to one `details` list, so a request hears of all of them in one 400 (CONTRACT §3).
 */

/** `filter` and `sort`: URL-encoded JSON, parsed against the table. */
export interface RowSelection {
  filter: RowFilter | null;
  /** The order really used, ending with id. */
  keys: SortKey[];
  /** The parameters as given, repeated in nextUrl. */
  filterText: string | undefined;
  sortText: string | undefined;
  /** Canonical forms, to bind cursors to. */
  canonical: { filter: unknown; sort: unknown };
}

export function parseSelection(params: { filter?: string; sort?: string }, table: FieldLookup, details: ErrorDetail[]): RowSelection {
  const rawFilter = jsonParam('filter', params.filter, details);
  const rawSort = jsonParam('sort', params.sort, details);
  const filter = rawFilter === undefined ? null : parseRowFilter(rawFilter, table, details);
  const sort = rawSort === undefined ? [] : parseRowSort(rawSort, table, details);
  return {
    filter,
    keys: effectiveSort(sort),
    filterText: params.filter,
    sortText: params.sort,
    canonical: { filter: rawFilter ?? null, sort: rawSort ?? null },
  };
}
