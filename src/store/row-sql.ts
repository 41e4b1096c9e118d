import { type RawBuilder, type SqlBool, sql } from 'kysely';
import type { RowFilter } from '../domain/row-filter.ts';
import type { CursorValue } from '../domain/cursor.ts';
import type { SortKey } from '../domain/row-sort.ts';
import type { ColumnKind, Dialect } from './dialect.ts';
import type { RowColumn } from '../domain/row-columns.ts';
import { compileLinkFilter } from './links/link-sql.ts';
import { isIndexed } from '../domain/field-types/registry.ts';

/** Filters, orders and keyset conditions of row lists, compiled to SQL for either dialect. */

const TRUE = sql<SqlBool>`1 = 1`;
const FALSE = sql<SqlBool>`1 = 0`;

export const COMPARISONS = { _eq: '=', _gt: '>', _gte: '>=', _lt: '<', _lte: '<=' } as const;

/** `%`, `_` and `\` in a pattern value are literal. */
const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

function likePattern(op: string, value: string): string {
  const v = escapeLike(value);
  return op === '_startsWith' ? `${v}%` : op === '_endsWith' ? `%${v}` : `%${v}%`;
}

export function joined(items: RawBuilder<SqlBool>[], op: 'and' | 'or'): RawBuilder<SqlBool> {
  if (items.length === 0) return op === 'and' ? TRUE : FALSE;
  if (items.length === 1) return items[0];
  return sql<SqlBool>`(${sql.join(items, sql.raw(` ${op} `))})`;
}

/** A text's first `n` characters (code points, as PostgreSQL's left() counts them). */
const prefixOf = (text: string, n: number): string => [...text.slice(0, 2 * n)].slice(0, n).join('');

/** Whether the dialect keys this column by a bounded prefix of its text (system columns are never long). */
function prefixed(target: RowColumn, dialect: Dialect): dialect is Dialect & { textKeyPrefix: number } {
  return dialect.textKeyPrefix !== null && !target.system && target.type.column === 'text';
}

/** What an index on this column is keyed by: the column, or the bounded prefix of a text column. */
export function indexKey(dialect: Dialect, column: string, kind: ColumnKind): RawBuilder<unknown> {
  const col = sql.ref(column);
  return dialect.textKeyPrefix !== null && kind === 'text' ? sql`left(${col}, ${sql.lit(dialect.textKeyPrefix)})` : sql`${col}`;
}

/**
 * A comparison of a column with a value, written so that an index on the column's key can serve it.
 * A text field without an index of its own is compared whole: its prefix would serve no index, and
 * the planner keeps statistics of the column but none of an expression no index holds. (PostgreSQL
 * took `left(country, 256) = 'JP'` for 0.5% of the customers where a tenth were, and answered a
 * list of orders filtered through their customer by reading and sorting every matching order
 * instead of walking the sort index: docs/decisions.md, "Links: speed".)
 */
function compare(target: RowColumn, op: keyof typeof COMPARISONS, value: unknown, dialect: Dialect): RawBuilder<SqlBool> {
  const column = sql.ref(target.column);
  const exact = sql<SqlBool>`${column} ${sql.raw(COMPARISONS[op])} ${value}`;
  if (!prefixed(target, dialect) || !isIndexed(target.field)) return exact;
  const key = indexKey(dialect, target.column, 'text');
  const n = dialect.textKeyPrefix;
  // A value shorter than the prefix compares with a column's prefix exactly as with the whole column.
  if ([...(value as string).slice(0, 2 * n)].length < n) return sql<SqlBool>`${key} ${sql.raw(COMPARISONS[op])} ${value}`;
  // A longer one: the prefix narrows the search (an index seek), the whole value decides.
  const loose = op === '_gt' ? '>=' : op === '_lt' ? '<=' : COMPARISONS[op];
  return sql<SqlBool>`(${key} ${sql.raw(loose)} ${prefixOf(value as string, n)} and ${exact})`;
}

/**
 * A filter as SQL. `row` names the table (or alias) of the row it is about, for the links it
 * follows: their subqueries refer to that row's id (compileLinkFilter, links/link-sql.ts).
 * `level` is how many links the filter is inside of. `start`, at the top: where every row answered
 * must meet `f` (the filter itself and the items of its `_and`s, not under `_or` or `_not`), the
 * first set of ids such a condition names may be where the database starts (Dialect.inKeySet).
 */
export function compileFilter(f: RowFilter, dialect: Dialect, row?: string, level = 0, start: { open: boolean } | null = level === 0 ? { open: true } : null): RawBuilder<SqlBool> {
  switch (f.kind) {
    case 'and':
    case 'or':
      return joined(
        f.items.map((i) => compileFilter(i, dialect, row, level, f.kind === 'and' ? start : null)),
        f.kind,
      );
    case 'not':
      // The exact complement: a row whose compared value is null matches `_not`, as it does not match the inner filter.
      return sql<SqlBool>`((${compileFilter(f.item, dialect, row, level, null)}) is not true)`;
    case 'link': {
      if (row === undefined) throw new Error('compileFilter: a link filter needs the row it is about');
      const keySet = start?.open === true && f.mode === 'linksTo';
      if (keySet && start) start.open = false;
      return compileLinkFilter(f, row, level, (inner, alias) => compileFilter(inner, dialect, alias, level + 1), keySet ? dialect : null);
    }
    case 'isNull':
      return f.isNull ? sql<SqlBool>`${sql.ref(f.target.column)} is null` : sql<SqlBool>`${sql.ref(f.target.column)} is not null`;
    case 'has':
      return dialect.listContains(f.target.column, f.value);
    case 'cmp': {
      if (f.op in COMPARISONS) return compare(f.target, f.op as keyof typeof COMPARISONS, f.target.type.toDb(f.value, dialect), dialect);
      return sql<SqlBool>`${sql.ref(f.target.column)} like ${likePattern(f.op, f.value as string)} escape '\\'`;
    }
  }
}

/**
 * One term of an ORDER BY: a sort key, or on PostgreSQL a text key's bounded prefix followed by
 * the key itself (the prefix orders as the whole value does, and an index on it serves the order).
 * `of` turns the key's cursor value into the term's.
 */
interface Term extends KeysetTerm {
  of(v: CursorValue): CursorValue;
}

/** A term of a keyset order: an expression, its direction and where its nulls go (none where it is never null). */
export interface KeysetTerm {
  expr: RawBuilder<unknown>;
  direction: 'asc' | 'desc';
  nulls: 'nullsFirst' | 'nullsLast';
  neverNull: boolean;
}

function termsOf(k: SortKey, dialect: Dialect): Term[] {
  const order = { direction: k.direction, nulls: k.nulls, neverNull: k.target.system };
  const whole: Term = { expr: sql`${sql.ref(k.target.column)}`, of: (v) => v, ...order };
  if (!prefixed(k.target, dialect)) return [whole];
  const n = dialect.textKeyPrefix;
  const prefix: Term = { expr: indexKey(dialect, k.target.column, 'text'), of: (v) => (typeof v === 'string' ? prefixOf(v, n) : v), ...order };
  return [prefix, whole];
}

/**
 * ORDER BY items; NULLS FIRST/LAST only where it differs from the database's own placement. A
 * field's index holds nulls first (user-tables.ts): where the filter leaves no null to place, the
 * placement that index serves is asked for, whatever the request said. System columns, never
 * null, have plain indexes and get no placement.
 */
export function orderBy(keys: SortKey[], dialect: Dialect, filter: RowFilter | null): RawBuilder<unknown> {
  const neverNull = nonNullColumns(filter);
  return sql.join(
    keys.flatMap((k) => {
      const nullsFirst = neverNull.has(k.target.column) ? k.direction === 'asc' : k.nulls === 'nullsFirst';
      const placement = k.target.system || nullsFirst === dialect.nullsFirstByDefault(k.direction) ? '' : nullsFirst ? ' nulls first' : ' nulls last';
      return termsOf(k, dialect).map((t) => sql`${t.expr} ${sql.raw(k.direction)}${sql.raw(placement)}`);
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
export function afterCursor(keys: SortKey[], values: CursorValue[], dialect: Dialect): RawBuilder<SqlBool> {
  // Same direction on never-null columns: one row-value comparison, which both databases serve from the index.
  if (keys.every((k) => k.target.system && k.direction === keys[0].direction)) {
    const cols = sql.join(keys.map((k) => sql.ref(k.target.column)));
    const vals = sql.join(values.map((v) => sql`${v}`));
    return sql<SqlBool>`(${cols}) ${sql.raw(keys[0].direction === 'asc' ? '>' : '<')} (${vals})`;
  }
  return keysetAfter(keys.flatMap((k, i) => termsOf(k, dialect).map((t) => ({ term: t, value: t.of(values[i]) }))));
}

/** What is strictly after the given values in the terms' order (a keyset condition), with a range an index can seek to. */
export function keysetAfter(terms: { term: KeysetTerm; value: CursorValue }[]): RawBuilder<SqlBool> {
  const chain = (i: number): RawBuilder<SqlBool> => {
    const { term, value } = terms[i];
    const strictly = beyond(term, value);
    if (i === terms.length - 1) return strictly;
    return joined([strictly, joined([same(term, value), chain(i + 1)], 'and')], 'or');
  };
  return joined([leadingBound(terms[0].term, terms[0].value), chain(0)], 'and');
}

/** Rows whose term is strictly after `v` in its key's order, nulls placed as asked. */
function beyond(t: KeysetTerm, v: CursorValue): RawBuilder<SqlBool> {
  const nullsLast = t.nulls === 'nullsLast';
  if (v === null) return nullsLast ? FALSE : sql<SqlBool>`${t.expr} is not null`;
  const cmp = sql<SqlBool>`${t.expr} ${sql.raw(t.direction === 'asc' ? '>' : '<')} ${v}`;
  return nullsLast && !t.neverNull ? sql<SqlBool>`(${cmp} or ${t.expr} is null)` : cmp;
}

function same({ expr }: KeysetTerm, v: CursorValue): RawBuilder<SqlBool> {
  return v === null ? sql<SqlBool>`${expr} is null` : sql<SqlBool>`${expr} = ${v}`;
}

/** A redundant range on the first term that an index can seek to; the chain then decides ties. */
function leadingBound(t: KeysetTerm, v: CursorValue): RawBuilder<SqlBool> {
  if (v === null) return t.nulls === 'nullsLast' ? sql<SqlBool>`${t.expr} is null` : TRUE;
  const range = sql<SqlBool>`${t.expr} ${sql.raw(t.direction === 'asc' ? '>=' : '<=')} ${v}`;
  return t.nulls === 'nullsLast' && !t.neverNull ? sql<SqlBool>`(${range} or ${t.expr} is null)` : range;
}
