/**
 * A small in-memory reference for row lists (CONTRACT §6): given rows as the API returns them, a
 * filter and a sort in the API's JSON syntax, it answers the ids of the matching rows in order.
 * It is written from the contract, independently of src/, so property tests can compare the
 * database's answer with it row for row.
 */

export type RefType = 'text' | 'number' | 'boolean' | 'dateTime' | 'date' | 'time' | 'yearMonth' | 'select' | 'record' | 'list' | 'file';

export interface RefRow {
  id: string;
  createdAt: string;
  updatedAt: string;
  createdBy: string;
  updatedBy: string;
  values: Record<string, unknown>;
}

/** Field code → type of the table's fields. */
export type RefFields = Record<string, RefType>;

export type RefFilter = Record<string, unknown>;
export type RefSort = Record<string, { direction: 'asc' | 'desc'; nulls: 'nullsFirst' | 'nullsLast' }>[];

const SYSTEM: Record<string, RefType> = {
  id: 'text',
  createdAt: 'dateTime',
  updatedAt: 'dateTime',
  createdBy: 'text',
  updatedBy: 'text',
};

/** Unicode code point order, which is UTF-8 byte order (not JavaScript's UTF-16 `<`). */
export function compareCodePoints(a: string, b: string): number {
  return Math.sign(Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
}

/** A filter value as the column holds it: date-times in UTC `YYYY-MM-DDTHH:mm:ss.sssZ`. */
function normalise(type: RefType, value: unknown): unknown {
  if (type === 'dateTime') return new Date(value as string).toISOString();
  return value;
}

/** Compares two non-null values of one type. */
export function compareValues(type: RefType, a: unknown, b: unknown): number {
  switch (type) {
    case 'number':
      return a === b ? 0 : (a as number) < (b as number) ? -1 : 1;
    case 'boolean':
      return a === b ? 0 : a === false ? -1 : 1;
    case 'text':
    case 'select':
      return compareCodePoints(a as string, b as string);
    case 'dateTime':
    case 'date':
    case 'time':
    case 'yearMonth':
      // Fixed-width ASCII forms: string order is time order.
      return a === b ? 0 : (a as string) < (b as string) ? -1 : 1;
    default:
      throw new Error(`a ${type} value has no order`);
  }
}

function typeOf(fields: RefFields, key: string, system: boolean): RefType {
  const type = system ? SYSTEM[key] : fields[key];
  if (!type) throw new Error(`reference: unknown ${system ? 'column' : 'field'} ${key}`);
  return type;
}

function valueOf(row: RefRow, key: string, system: boolean): unknown {
  return system ? (row as unknown as Record<string, unknown>)[key] : row.values[key];
}

/** One condition `{op: value, …}`: its operators are ANDed; a comparison with a null value is false. */
function matchesCondition(type: RefType, value: unknown, cond: Record<string, unknown>): boolean {
  return Object.entries(cond).every(([op, operand]) => {
    if (op === '_isNull') return (value === null || value === undefined) === operand;
    if (value === null || value === undefined) return false;
    if (type === 'list') {
      if (op !== '_contains') throw new Error(`reference: ${op} on a list`);
      return (value as unknown[]).some((e) => typeof e === typeof operand && e === operand);
    }
    switch (op) {
      case '_contains':
        return (value as string).includes(operand as string);
      case '_startsWith':
        return (value as string).startsWith(operand as string);
      case '_endsWith':
        return (value as string).endsWith(operand as string);
    }
    const c = compareValues(type, value, normalise(type, operand));
    switch (op) {
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
      default:
        throw new Error(`reference: unknown operator ${op}`);
    }
  });
}

/** Whether a row matches a filter object: its keys are ANDed; `_not` is the exact complement. */
export function matchesFilter(fields: RefFields, row: RefRow, filter: RefFilter): boolean {
  return Object.entries(filter).every(([key, v]) => {
    if (key === '_and') return (v as RefFilter[]).every((f) => matchesFilter(fields, row, f));
    if (key === '_or') return (v as RefFilter[]).some((f) => matchesFilter(fields, row, f));
    if (key === '_not') return !matchesFilter(fields, row, v as RefFilter);
    if (key === 'values') {
      return Object.entries(v as Record<string, Record<string, unknown>>).every(([code, cond]) =>
        matchesCondition(typeOf(fields, code, false), valueOf(row, code, false), cond),
      );
    }
    return matchesCondition(typeOf(fields, key, true), valueOf(row, key, true), v as Record<string, unknown>);
  });
}

interface RefKey {
  key: string;
  system: boolean;
  type: RefType;
  direction: 'asc' | 'desc';
  nulls: 'nullsFirst' | 'nullsLast';
}

/** The order a list uses: the sort keys (default createdAt asc), then id asc unless id is a key. */
function effectiveKeys(fields: RefFields, sort: RefSort | undefined): RefKey[] {
  const given = (sort ?? []).map((el) => {
    const [key, spec] = Object.entries(el)[0];
    const system = Object.hasOwn(SYSTEM, key);
    return { key, system, type: typeOf(fields, key, system), ...spec };
  });
  const keys: RefKey[] = given.length > 0 ? given : [{ key: 'createdAt', system: true, type: 'dateTime', direction: 'asc', nulls: 'nullsLast' }];
  if (!keys.some((k) => k.key === 'id')) keys.push({ key: 'id', system: true, type: 'text', direction: 'asc', nulls: 'nullsLast' });
  return keys;
}

/** A comparator of rows in the list's order; nulls are placed as asked whatever the direction. */
export function rowComparator(fields: RefFields, sort: RefSort | undefined): (a: RefRow, b: RefRow) => number {
  const keys = effectiveKeys(fields, sort);
  return (a, b) => {
    for (const k of keys) {
      const va = valueOf(a, k.key, k.system) ?? null;
      const vb = valueOf(b, k.key, k.system) ?? null;
      let c: number;
      if (va === null && vb === null) c = 0;
      else if (va === null) c = k.nulls === 'nullsFirst' ? -1 : 1;
      else if (vb === null) c = k.nulls === 'nullsFirst' ? 1 : -1;
      else c = compareValues(k.type, va, vb) * (k.direction === 'desc' ? -1 : 1);
      if (c !== 0) return c;
    }
    return 0;
  };
}

/** The ids of the rows a list with this filter and sort returns, in order. */
export function referenceRows(fields: RefFields, rows: RefRow[], filter?: RefFilter, sort?: RefSort): string[] {
  const matching = filter === undefined ? [...rows] : rows.filter((r) => matchesFilter(fields, r, filter));
  return matching.sort(rowComparator(fields, sort)).map((r) => r.id);
}
