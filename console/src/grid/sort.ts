/** The view's sort as the API takes it (CONTRACT §6): keys in priority order, each with its direction and null placement. */
export interface SortKey {
  key: string;
  direction: 'asc' | 'desc';
  nulls: 'nullsFirst' | 'nullsLast';
}

export function parseSort(text: string | null): SortKey[] {
  if (!text) return [];
  try {
    const json = JSON.parse(text) as Record<string, { direction: 'asc' | 'desc'; nulls: 'nullsFirst' | 'nullsLast' }>[];
    return json.flatMap((o) => Object.entries(o).map(([key, v]) => ({ key, direction: v.direction, nulls: v.nulls })));
  } catch {
    return [];
  }
}

export function sortText(keys: SortKey[]): string | null {
  return keys.length === 0 ? null : JSON.stringify(keys.map((k) => ({ [k.key]: { direction: k.direction, nulls: k.nulls } })));
}

/**
 * A header clicked: unsorted → ascending → descending → unsorted. Alone it sorts by that column;
 * with Shift it adds the column to the sort, or moves it along its cycle there.
 */
export function cycleSort(keys: SortKey[], key: string, add: boolean): SortKey[] {
  const current = keys.find((k) => k.key === key);
  const next: SortKey | null = !current
    ? { key, direction: 'asc', nulls: 'nullsLast' }
    : current.direction === 'asc'
      ? { ...current, direction: 'desc' }
      : null;
  if (!add) return next ? [next] : [];
  if (!current) return [...keys, next as SortKey];
  return next ? keys.map((k) => (k.key === key ? next : k)) : keys.filter((k) => k.key !== key);
}

export function toggleNulls(keys: SortKey[], key: string): SortKey[] {
  return keys.map((k) => (k.key === key ? { ...k, nulls: k.nulls === 'nullsLast' ? 'nullsFirst' : 'nullsLast' } : k));
}
