import type { ErrorDetail } from './errors.ts';
import { type FieldLookup, type RowColumn, SYSTEM_COLUMNS, fieldTarget, isSystemColumn } from './row-columns.ts';
import { isObject } from './json.ts';

/** One sort key of a row list (CONTRACT §6). */
export interface SortKey {
  target: RowColumn;
  direction: 'asc' | 'desc';
  nulls: 'nullsFirst' | 'nullsLast';
}

const MAX_KEYS = 8;
/** Parses a sort already decoded from JSON: `[{"<key>": {"direction", "nulls"}}, …]`; problems go to `details`. */
export function parseRowSort(value: unknown, table: FieldLookup, details: ErrorDetail[]): SortKey[] {
  return parseSortSpec(value, MAX_KEYS, details, (key, path) => {
    const field = table.fieldsByCode.get(key);
    const target = isSystemColumn(key) ? SYSTEM_COLUMNS[key] : field ? fieldTarget(field) : undefined;
    if (!target) {
      details.push({ path, message: 'is neither a system column nor a field of this table' });
      return null;
    }
    if (!target.type.sortable) details.push({ path, message: `a ${target.type.name} field cannot be a sort key` });
    return target;
  }).map(({ target, direction, nulls }) => ({ target, direction, nulls }));
}

/**
 * The shape every sort shares, `[{"<key>": {"direction", "nulls"}}, …]` with at most `max` keys,
 * each named once; `resolve` finds what a key names (reporting why not, and answering null).
 */
export function parseSortSpec<T>(
  value: unknown,
  max: number,
  details: ErrorDetail[],
  resolve: (key: string, path: string) => T | null,
): { target: T; direction: SortKey['direction']; nulls: SortKey['nulls'] }[] {
  const keys: { target: T; direction: SortKey['direction']; nulls: SortKey['nulls'] }[] = [];
  if (!Array.isArray(value)) {
    details.push({ path: 'sort', message: 'must be an array of sort conditions' });
    return keys;
  }
  if (value.length > max) {
    details.push({ path: 'sort', message: `has more than ${max} conditions` });
    return keys;
  }
  const seen = new Set<string>();
  value.forEach((cond, i) => {
    const path = `sort[${i}]`;
    if (!isObject(cond) || Object.keys(cond).length !== 1) {
      details.push({ path, message: 'must be an object with exactly one key: {"<column>": {"direction", "nulls"}}' });
      return;
    }
    const [key, spec] = Object.entries(cond)[0];
    const target = resolve(key, `${path}.${key}`);
    if (target === null) return;
    if (seen.has(key)) details.push({ path: `${path}.${key}`, message: 'appears more than once' });
    seen.add(key);
    if (!isObject(spec)) {
      details.push({ path: `${path}.${key}`, message: 'must be an object {"direction", "nulls"}' });
      return;
    }
    for (const extra of Object.keys(spec).filter((k) => k !== 'direction' && k !== 'nulls')) {
      details.push({ path: `${path}.${key}.${extra}`, message: 'is not a sort option; use direction and nulls' });
    }
    const { direction, nulls } = spec;
    if (direction !== 'asc' && direction !== 'desc') details.push({ path: `${path}.${key}.direction`, message: 'must be "asc" or "desc"' });
    if (nulls !== 'nullsFirst' && nulls !== 'nullsLast') {
      details.push({ path: `${path}.${key}.nulls`, message: 'must be "nullsFirst" or "nullsLast"' });
    }
    keys.push({ target, direction: direction as SortKey['direction'], nulls: nulls as SortKey['nulls'] });
  });
  return keys;
}

/** The order a list really uses: the requested keys (default createdAt asc), then id asc unless id is already a key. */
export function effectiveSort(keys: SortKey[]): SortKey[] {
  const order = keys.length > 0 ? keys : [{ target: SYSTEM_COLUMNS.createdAt, direction: 'asc' as const, nulls: 'nullsLast' as const }];
  return order.some((k) => k.target.key === 'id')
    ? order
    : [...order, { target: SYSTEM_COLUMNS.id, direction: 'asc', nulls: 'nullsLast' }];
}
