import type { ErrorDetail } from '../errors.ts';
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

function json(name: string, text: string | undefined, details: ErrorDetail[]): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    details.push({ path: name, message: 'is not valid JSON' });
    return undefined;
  }
}

/** The known parameters, each given at most once; unknown and repeated ones are problems (and read as absent). */
export function readQuery<K extends string>(query: Record<string, unknown>, allowed: readonly K[], details: ErrorDetail[]): Record<K, string | undefined> {
  for (const key of Object.keys(query)) {
    if (!(allowed as readonly string[]).includes(key)) details.push({ path: key, message: `unknown query parameter; use ${allowed.join(', ')}` });
  }
  const out = {} as Record<K, string | undefined>;
  for (const name of allowed) {
    const v = query[name];
    if (v !== undefined && typeof v !== 'string') details.push({ path: name, message: 'must be given once' });
    out[name] = typeof v === 'string' ? v : undefined;
  }
  return out;
}

export function parseSelection(params: { filter?: string; sort?: string }, table: FieldLookup, details: ErrorDetail[]): RowSelection {
  const rawFilter = json('filter', params.filter, details);
  const rawSort = json('sort', params.sort, details);
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

/** An integer parameter within bounds; `fallback` when absent or wrong (the problem is reported). */
export function intParam(name: string, text: string | undefined, min: number, max: number, fallback: number, details: ErrorDetail[]): number {
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) {
    details.push({ path: name, message: `must be an integer from ${min} to ${max}` });
    return fallback;
  }
  return Number(text);
}
