import { type RawBuilder, type SqlBool, sql } from 'kysely';
import type { RowFilter } from '../domain/row-filter.ts';
import type { CursorValue } from '../domain/cursor.ts';
import type { SortKey } from '../domain/row-sort.ts';
import type { Dialect } from './dialect.ts';

/** Filters, orders and keyset conditions of row lists, compiled to SQL for either dialect. */

const TRUE = sql<SqlBool>`1 = 1`;
const FALSE = sql<SqlBool>`1 = 0`;

const COMPARISONS = { _eq: '=', _gt: '>', _gte: '>=', _lt: '<', _lte: '<=' } as const;

/** `%`, `_` and `\` in a pattern value are literal. */
const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

function likePattern(op: string, value: string): string {
  const v = escapeLike(value);
  return op === '_startsWith' ? `${v}%` : op === '_endsWith' ? `%${v}` : `%${v}%`;
}

function joined(items: RawBuilder<SqlBool>[], op: 'and' | 'or'): RawBuilder<SqlBool> {
  if (items.length === 0) return op === 'and' ? TRUE : FALSE;
  if (items.length === 1) return items[0];
  return sql<SqlBool>`(${sql.join(items, sql.raw(` ${op} `))})`;
}

export function compileFilter(f: RowFilter, dialect: Dialect): RawBuilder<SqlBool> {
  switch (f.kind) {
    case 'and':
    case 'or':
      return joined(f.items.map((i) => compileFilter(i, dialect)), f.kind);
    case 'not':
      // The exact complement: a row whose compared value is null matches `_not`, as it does not match the inner filter.
      return sql<SqlBool>`((${compileFilter(f.item, dialect)}) is not true)`;
    case 'isNull':
      return f.isNull ? sql<SqlBool>`${sql.ref(f.target.column)} is null` : sql<SqlBool>`${sql.ref(f.target.column)} is not null`;
    case 'has':
      return dialect.listContains(f.target.column, f.value);
    case 'cmp': {
      const column = sql.ref(f.target.column);
      if (f.op in COMPARISONS) {
        const value = f.target.type.toDb(f.value, dialect);
        return sql<SqlBool>`${column} ${sql.raw(COMPARISONS[f.op as keyof typeof COMPARISONS])} ${value}`;
      }
      return sql<SqlBool>`${column} like ${likePattern(f.op, f.value as string)} escape '\\'`;
    }
  }
}

/** ORDER BY items; NULLS FIRST/LAST only where it differs from the database's own placement, so indexes serve it. */
export function orderBy(keys: SortKey[], dialect: Dialect, filter: RowFilter | null): RawBuilder<unknown> {
  const neverNull = nonNullColumns(filter);
  return sql.join(
    keys.map((k) => {
      const nullsFirst = k.nulls === 'nullsFirst';
      // Where no row can be null the placement is moot: leaving it out lets an index serve the order.
      const moot = k.target.system || neverNull.has(k.target.column);
      const placement = moot || nullsFirst === dialect.nullsFirstByDefault(k.direction) ? '' : nullsFirst ? ' nulls first' : ' nulls last';
      return sql`${sql.ref(k.target.column)} ${sql.raw(k.direction)}${sql.raw(placement)}`;
    }),
  );
}


/**
 * The columns a filter keeps every row non-null in: those with a comparison (true only for a
 * value) or `_isNull: false` among the conditions every row must meet (not under `_or`/`_not`).
 */
function nonNullColumns(filter: RowFilter | null): Set<string> {
  const columns = new Set<string>();
  const visit = (f: RowFilter) => {
    if (f.kind === 'and') f.items.forEach(visit);
    else if (f.kind === 'cmp' || f.kind === 'has' || (f.kind === 'isNull' && !f.isNull)) columns.add(f.target.column);
  };
  if (filter) visit(filter);
  return columns;
}

/** Rows strictly after the cursor's row in key order: the keyset condition. */
export function afterCursor(keys: SortKey[], values: CursorValue[]): RawBuilder<SqlBool> {
  // Same direction on never-null columns: one row-value comparison, which both databases serve from the index.
  if (keys.every((k) => k.target.system && k.direction === keys[0].direction)) {
    const cols = sql.join(keys.map((k) => sql.ref(k.target.column)));
    const vals = sql.join(values.map((v) => sql`${v}`));
    return sql<SqlBool>`(${cols}) ${sql.raw(keys[0].direction === 'asc' ? '>' : '<')} (${vals})`;
  }
  const chain = (i: number): RawBuilder<SqlBool> => {
    const k = keys[i];
    const v = values[i];
    const strictly = beyond(k, v);
    if (i === keys.length - 1) return strictly;
    return joined([strictly, joined([same(k, v), chain(i + 1)], 'and')], 'or');
  };
  return joined([leadingBound(keys[0], values[0]), chain(0)], 'and');
}

/** Rows whose key is strictly after `v` in this key's order, nulls placed as asked. */
function beyond(k: SortKey, v: CursorValue): RawBuilder<SqlBool> {
  const col = sql.ref(k.target.column);
  const nullsLast = k.nulls === 'nullsLast';
  if (v === null) return nullsLast ? FALSE : sql<SqlBool>`${col} is not null`;
  const cmp = sql<SqlBool>`${col} ${sql.raw(k.direction === 'asc' ? '>' : '<')} ${v}`;
  return nullsLast && !k.target.system ? sql<SqlBool>`(${cmp} or ${col} is null)` : cmp;
}

function same(k: SortKey, v: CursorValue): RawBuilder<SqlBool> {
  const col = sql.ref(k.target.column);
  return v === null ? sql<SqlBool>`${col} is null` : sql<SqlBool>`${col} = ${v}`;
}

/** A redundant range on the first key that an index can seek to; the chain then decides ties. */
function leadingBound(k: SortKey, v: CursorValue): RawBuilder<SqlBool> {
  const col = sql.ref(k.target.column);
  if (v === null) return k.nulls === 'nullsLast' ? sql<SqlBool>`${col} is null` : TRUE;
  const range = sql<SqlBool>`${col} ${sql.raw(k.direction === 'asc' ? '>=' : '<=')} ${v}`;
  return k.nulls === 'nullsLast' && !k.target.system ? sql<SqlBool>`(${range} or ${col} is null)` : range;
}
