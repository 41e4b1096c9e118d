import type { RowFilter } from './row-filter.ts';
import type { RowColumn } from './row-columns.ts';
import type { RowRecord } from './row.ts';

/**
 * The row filter of CONTRACT §6 evaluated in memory, on a row record as the API renders it
 * (`{id, createdAt, …, values}`): for a flow's trigger, which judges each change's row without a
 * query. It answers as the database does (row-sql.ts): a comparison with null is false, text
 * compares in code point order (byte order of UTF-8, COLLATE "C"), date-times as the UTC text both
 * sides are normalised to, and `_contains` on a list finds an element of the same JSON type.
 * Adapted from the reference evaluator of the property tests (test/support/reference-rows.ts),
 * against which test/domain/row-filter-match.test.ts checks it.
 */

function valueOf(record: RowRecord, target: RowColumn): unknown {
  const v = target.system ? (record as unknown as Record<string, unknown>)[target.key] : record.values[target.key];
  return v === undefined ? null : v;
}

/** Code point order: the order of UTF-8 bytes, which is not JavaScript's UTF-16 `<`. */
function compareText(a: string, b: string): number {
  return Math.sign(Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
}

function compare(typeName: string, a: unknown, b: unknown): number {
  if (typeName === 'number') return a === b ? 0 : (a as number) < (b as number) ? -1 : 1;
  if (typeName === 'boolean') return a === b ? 0 : a === false ? -1 : 1;
  if (typeName === 'text' || typeName === 'select') return compareText(a as string, b as string);
  // dateTime, date, time, yearMonth: fixed-width ASCII forms, so text order is time order.
  return a === b ? 0 : (a as string) < (b as string) ? -1 : 1;
}

export function matchesRowFilter(filter: RowFilter, record: RowRecord): boolean {
  switch (filter.kind) {
    case 'and':
      return filter.items.every((f) => matchesRowFilter(f, record));
    case 'or':
      return filter.items.some((f) => matchesRowFilter(f, record));
    case 'not':
      return !matchesRowFilter(filter.item, record);
    case 'isNull': {
      const v = valueOf(record, filter.target);
      // A multiple link with no links reads [] and is null in its column.
      const empty = v === null || (filter.target.type.name === 'link' && Array.isArray(v) && v.length === 0);
      return empty === filter.isNull;
    }
    case 'link': {
      // Only `_has`/`_eq` reach here: a filter through a link is refused where no query runs (no `linked` tables).
      const v = valueOf(record, filter.target);
      return filter.mode === 'linksTo' && (Array.isArray(v) ? v.includes(filter.id) : v === filter.id);
    }
    case 'has': {
      const list = valueOf(record, filter.target);
      return Array.isArray(list) && list.some((e) => typeof e === typeof filter.value && e === filter.value);
    }
    case 'cmp': {
      const v = valueOf(record, filter.target);
      if (v === null) return false;
      const operand = filter.value;
      switch (filter.op) {
        case '_contains':
          return (v as string).includes(operand as string);
        case '_startsWith':
          return (v as string).startsWith(operand as string);
        case '_endsWith':
          return (v as string).endsWith(operand as string);
      }
      const c = compare(filter.target.type.comparisonType ?? filter.target.type.name, v, operand);
      switch (filter.op) {
        case '_eq':
          return c === 0;
        case '_gt':
          return c > 0;
        case '_gte':
          return c >= 0;
        case '_lt':
          return c < 0;
        case '_lte':
          return c <= 0;
      }
    }
  }
  return false;
}
