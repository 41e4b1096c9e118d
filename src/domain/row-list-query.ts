import { type ErrorDetail, invalid } from '../errors.ts';
import type { FieldLookup } from './row-columns.ts';
import { type RowFilter, parseRowFilter } from './row-filter.ts';
import { type SortKey, effectiveSort, parseRowSort } from './row-sort.ts';

/** `filter` and `sort` of a row list or export: URL-encoded JSON, parsed against the table. */
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

function single(query: Record<string, unknown>, name: string, details: ErrorDetail[]): string | undefined {
  const v = query[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') {
    details.push({ path: name, message: 'must be given once' });
    return undefined;
  }
  return v;
}

function json(name: string, text: string | undefined, details: ErrorDetail[]): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    details.push({ path: name, message: 'is not valid JSON' });
    return undefined;
  }
}

/** Reads the query string: unknown parameters, repeated ones and bad JSON are reported together. */
export function readQuery(query: Record<string, unknown>, allowed: readonly string[], what: string): Record<string, string | undefined> {
  const details: ErrorDetail[] = [];
  for (const key of Object.keys(query)) {
    if (!allowed.includes(key)) details.push({ path: key, message: `unknown query parameter; use ${allowed.join(', ')}` });
  }
  const out = Object.fromEntries(allowed.map((name) => [name, single(query, name, details)]));
  if (details.length > 0) throw invalid(details, what);
  return out;
}

export function parseSelection(params: Record<string, string | undefined>, table: FieldLookup): RowSelection {
  const details: ErrorDetail[] = [];
  const rawFilter = json('filter', params.filter, details);
  const rawSort = json('sort', params.sort, details);
  if (details.length > 0) throw invalid(details, 'Invalid query');
  const filter = rawFilter === undefined ? null : parseRowFilter(rawFilter, table);
  const sort = rawSort === undefined ? [] : parseRowSort(rawSort, table);
  return {
    filter,
    keys: effectiveSort(sort),
    filterText: params.filter,
    sortText: params.sort,
    canonical: { filter: rawFilter ?? null, sort: rawSort ?? null },
  };
}

/** An integer query parameter within bounds. */
export function intParam(name: string, text: string | undefined, min: number, max: number, fallback: number): number {
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) {
    throw invalid([{ path: name, message: `must be an integer from ${min} to ${max}` }], 'Invalid query');
  }
  return Number(text);
}
