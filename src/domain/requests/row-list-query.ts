import type { ErrorDetail } from '../errors.ts';
import { type CursorValue, cursorBinding, readCursor } from '../cursor.ts';
import { intParam, jsonParam, readQuery } from '../query-string.ts';
import type { FieldLookup } from '../row-columns.ts';
import { type RowFilter, parseRowFilter } from '../row-filter.ts';
import { throwIfInvalid } from '../row-values.ts';
import { type SortKey, effectiveSort, parseRowSort } from '../row-sort.ts';
import type { FieldDef } from '../field-types/field-type.ts';
import { parseExpand } from './expand.ts';

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

/** A row list request: `GET /rows?pageSize&filter&sort&cursor` (CONTRACT §6). */
export interface RowListRequest {
  pageSize: number;
  selection: RowSelection;
  /** The sort values the cursor carries: the page starts after them. */
  after: CursorValue[] | null;
  /** What the next page's cursor is bound to. */
  binding: string;
  /** The link fields to expand (`expand`, CONTRACT §11), and the parameter as given, repeated in nextUrl. */
  expand: FieldDef[];
  expandText: string | undefined;
}

const LIST_PARAMS = ['pageSize', 'filter', 'sort', 'cursor', 'expand'] as const;

/** Parses and checks a list's query string against the table; every problem at once, as one 400. */
export function parseRowList(query: Record<string, unknown>, table: FieldLookup, secret: string): RowListRequest {
  const details: ErrorDetail[] = [];
  const params = readQuery(query, LIST_PARAMS, details);
  const pageSize = intParam('pageSize', params.pageSize, 1, 200, 50, details);
  const selection = parseSelection(params, table, details);
  const expand = parseExpand(params.expand, table, details);
  throwIfInvalid(details, 'Invalid list query');
  const keyColumns = selection.keys.map((k) => `${k.target.column}:${k.target.type.name}`);
  const binding = cursorBinding(table.id, selection.canonical.filter, selection.canonical.sort, keyColumns);
  const after = params.cursor === undefined ? null : readCursor(secret, params.cursor, binding, selection.keys.length);
  return { pageSize, selection, after, binding, expand, expandText: params.expand };
}

/** The query string of the page after this one: the request's own parameters and the cursor. */
export function nextPageQuery(request: RowListRequest, cursor: string): string {
  const next = new URLSearchParams({ pageSize: String(request.pageSize) });
  if (request.selection.filterText !== undefined) next.set('filter', request.selection.filterText);
  if (request.selection.sortText !== undefined) next.set('sort', request.selection.sortText);
  if (request.expandText !== undefined) next.set('expand', request.expandText);
  next.set('cursor', cursor);
  return next.toString();
}
