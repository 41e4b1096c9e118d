import { type CompiledQuery, type RawBuilder, type SqlBool, sql } from 'kysely';
import type { CursorValue } from '../domain/cursor.ts';
import { badRequest, invalid } from '../domain/errors.ts';
import type { AggregateTerm, BucketSource, GroupKey, HavingFilter, Metric } from '../domain/requests/aggregate-query.ts';
import { isSingleLink, metricType } from '../domain/requests/aggregate-query.ts';
import type { AggregatePlan } from '../plan/aggregate-plan.ts';
import { readRows } from './read-rows.ts';
import type { Db, Dialect } from './dialect.ts';
import { COMPARISONS, compileFilter, joined, keysetAfter } from './row-sql.ts';

/**
 * An aggregate plan (plan/aggregate-plan.ts) as ONE statement per page, on either database:
 *
 *   select * from (select <group keys> as g0…, <metrics> as m0… from rows_… where <filter> group by 1, 2…) as a
 *   where <having> and <after the cursor's group> order by <terms> limit <page size + 1>
 *
 * The rows never leave the database: it filters, groups and measures them, then applies `having`
 * and the keyset over the groups' order to the groups. Group keys are named by their place in the
 * GROUP BY, so a bucket's expression (and its bound time zone) is written once.
 */

/** A page of groups: their columns (g0…, m0…) as the database returns them, and the last one's order values when more follow. */
export interface AggregatePage {
  groups: Record<string, unknown>[];
  next: CursorValue[] | null;
}

export const groupColumn = (i: number) => `g${i}`;
export const metricColumn = (i: number) => `m${i}`;

/** A column as grouped and counted: a single link by the linked row's id, else the column itself. */
function valueExpression(target: GroupKey['target'], dialect: Dialect): RawBuilder<unknown> {
  return isSingleLink(target) ? dialect.aggregates.linkId(target.column) : sql`${sql.ref(target.column)}`;
}

function keyExpression(g: GroupKey, dialect: Dialect): RawBuilder<unknown> {
  if (g.bucket === null) return valueExpression(g.target, dialect);
  return dialect.aggregates.bucket(g.target.column, g.target.type.name as BucketSource, g.bucket, g.timeZone);
}

function metricExpression(m: Metric, dialect: Dialect): RawBuilder<unknown> {
  if (m.target === null) return sql`count(*)`;
  const col = sql.ref(m.target.column);
  switch (m.fn) {
    case 'count':
    case 'countDistinct':
      return sql`count(distinct ${valueExpression(m.target, dialect)})`;
    case 'sum':
      return sql`sum(${col})`;
    case 'avg':
      return sql`avg(${col})`;
    case 'min':
    case 'max':
      return dialect.aggregates.extreme(m.fn, m.target.column, m.target.type.column);
  }
}

/** A value compared with a metric: numbers as doubles (a count is a bigint on PostgreSQL, a bound 5.5 is not), else as the field's column holds it. */
function metricValue(m: Metric, value: unknown, dialect: Dialect): RawBuilder<unknown> {
  const type = metricType(m);
  return type.name === 'number' ? sql`cast(${value} as double precision)` : sql`${type.toDb(value, dialect)}`;
}

function compileHaving(f: HavingFilter, metrics: Metric[], dialect: Dialect): RawBuilder<SqlBool> {
  switch (f.kind) {
    case 'and':
    case 'or':
      return joined(f.items.map((i) => compileHaving(i, metrics, dialect)), f.kind);
    case 'not':
      // As in the rows filter: a group whose metric is null matches `_not` when it does not match the inner filter.
      return sql<SqlBool>`((${compileHaving(f.item, metrics, dialect)}) is not true)`;
    case 'isNull':
      return sql<SqlBool>`${sql.ref(metricColumn(f.metric))} is ${sql.raw(f.isNull ? 'null' : 'not null')}`;
    case 'cmp':
      return sql<SqlBool>`${sql.ref(metricColumn(f.metric))} ${sql.raw(COMPARISONS[f.op])} ${metricValue(metrics[f.metric], f.value, dialect)}`;
  }
}

const termColumn = (t: AggregateTerm) => (t.of.kind === 'group' ? groupColumn(t.of.index) : metricColumn(t.of.index));

/** The page's statement: at most `limit` groups after the cursor's, in order. */
export function aggregateQuery(db: Db, dialect: Dialect, plan: AggregatePlan, limit: number): CompiledQuery {
  const { groupBy, metrics, filter, having, order, after } = plan.request;
  const selected = [
    ...groupBy.map((g, i) => sql`${keyExpression(g, dialect)} as ${sql.id(groupColumn(i))}`),
    ...metrics.map((m, i) => sql`${metricExpression(m, dialect)} as ${sql.id(metricColumn(i))}`),
  ];
  const where = filter ? sql` where ${compileFilter(filter, dialect, plan.table.physical)}` : sql``;
  const grouped = groupBy.length > 0 ? sql` group by ${sql.raw(groupBy.map((_, i) => String(i + 1)).join(', '))}` : sql``;
  const conditions: RawBuilder<SqlBool>[] = [];
  if (having) conditions.push(compileHaving(having, metrics, dialect));
  if (after && order.length > 0) {
    conditions.push(keysetAfter(order.map((t, i) => ({ term: { expr: sql`${sql.ref(termColumn(t))}`, direction: t.direction, nulls: t.nulls, neverNull: t.neverNull }, value: after[i] }))));
  }
  const outerWhere = conditions.length > 0 ? sql` where ${joined(conditions, 'and')}` : sql``;
  const orderBy =
    order.length > 0
      ? sql` order by ${sql.join(order.map((t) => sql`${sql.ref(termColumn(t))} ${sql.raw(t.direction)} ${sql.raw(t.nulls === 'nullsFirst' ? 'nulls first' : 'nulls last')}`))}`
      : sql``;
  return sql`select * from (select ${sql.join(selected)} from ${sql.table(plan.table.physical)}${where}${grouped}) as ${sql.id('a')}${outerWhere}${orderBy} limit ${limit}`.compile(db);
}

const overflow = () => badRequest('a sum or average of these rows is beyond the range of a double (about 1.8e308): narrow the filter or the groups');

/** Runs the plan's page: one statement reading at most one group more than the page, to know whether more follow. */
export async function aggregatePage(db: Db, dialect: Dialect, plan: AggregatePlan): Promise<AggregatePage> {
  let rows: Record<string, unknown>[];
  try {
    rows = await readRows(db, aggregateQuery(db, dialect, plan, plan.limit + 1));
  } catch (err) {
    if (dialect.aggregates.isOverflow(err)) throw overflow();
    if (!dialect.aggregates.isUnknownTimeZone(err)) throw err;
    const zones = plan.request.groupBy.flatMap((g, i) => (g.timeZone === null || g.timeZone === 'UTC' ? [] : [{ path: `groupBy[${i}].timeZone`, message: `${g.timeZone} is not known to the database's time-zone data` }]));
    throw invalid(zones, 'Invalid aggregate query');
  }
  const measured = plan.request.metrics.flatMap((m, i) => (m.fn === 'sum' || m.fn === 'avg' ? [metricColumn(i)] : []));
  if (rows.some((row) => measured.some((c) => typeof row[c] === 'number' && !Number.isFinite(row[c])))) throw overflow();
  if (rows.length <= plan.limit) return { groups: rows, next: null };
  const groups = rows.slice(0, plan.limit);
  const last = groups[groups.length - 1];
  return { groups, next: plan.request.order.map((t) => last[termColumn(t)] as CursorValue) };
}
