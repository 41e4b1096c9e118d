import { type CursorValue, cursorBinding, readCursor } from '../cursor.ts';
import type { ErrorDetail } from '../errors.ts';
import { type FieldTypeName, ORDER_OPS } from '../field-types/field-type.ts';
import { fieldType } from '../field-types/registry.ts';
import { linkOptions } from '../field-types/link.ts';
import { isObject } from '../json.ts';
import { intParam, jsonParam, readQuery } from '../query-string.ts';
import { type FieldLookup, type RowColumn, SYSTEM_COLUMNS, fieldTarget, isSystemColumn } from '../row-columns.ts';
import { type RowFilter, parseRowFilter } from '../row-filter.ts';
import { parseSortSpec } from '../row-sort.ts';
import { throwIfInvalid } from '../row-values.ts';
import { canonicalTimeZone } from '../time-zones.ts';
import { UNSTORABLE_TEXT, unstorableTextAt } from '../storable-text.ts';

/**
 * `GET /api/tables/{t}/rows-aggregate` (CONTRACT §13), read into a typed value: group keys (fields
 * and date buckets in a time zone), metrics, the rows filter, `having` over the metrics, the order
 * of the groups, the page size and the cursor. Every problem is reported at once, as one 400.
 */

export const BUCKETS = ['year', 'quarter', 'month', 'week', 'day', 'hour'] as const;
export type Bucket = (typeof BUCKETS)[number];

/** The buckets each date-like type takes: `hour` needs a time of day, `week` and `day` a day. */
export const BUCKETS_OF: Partial<Record<FieldTypeName, readonly Bucket[]>> = {
  dateTime: BUCKETS,
  date: ['year', 'quarter', 'month', 'week', 'day'],
  yearMonth: ['year', 'quarter', 'month'],
};

/** The date-like types a bucket applies to. */
export type BucketSource = 'dateTime' | 'date' | 'yearMonth';

export interface GroupKey {
  /** The field as the request named it: the key of `group` in the answer, and of `sort`. */
  key: string;
  target: RowColumn;
  bucket: Bucket | null;
  /** The zone a dateTime bucket is taken in (canonical IANA name); null for other keys. */
  timeZone: string | null;
}

export const METRIC_FNS = ['count', 'sum', 'avg', 'min', 'max', 'countDistinct'] as const;
export type MetricFn = (typeof METRIC_FNS)[number];

export interface Metric {
  /** Its key in `metrics` of the answer, in `having` and in `sort`. */
  name: string;
  fn: MetricFn;
  /** The field it is taken over; null for `count`. */
  target: RowColumn | null;
}

/** `having`: conditions on metrics, by their index in `metrics`. */
export type HavingFilter =
  | { kind: 'and' | 'or'; items: HavingFilter[] }
  | { kind: 'not'; item: HavingFilter }
  | { kind: 'isNull'; metric: number; isNull: boolean }
  | { kind: 'cmp'; metric: number; op: '_eq' | '_gt' | '_gte' | '_lt' | '_lte'; value: unknown };

/** One term of the groups' order: a group key or a metric, by index. */
export interface AggregateTerm {
  of: { kind: 'group' | 'metric'; index: number };
  direction: 'asc' | 'desc';
  nulls: 'nullsFirst' | 'nullsLast';
  /** Never null: counts, and group keys over system columns. */
  neverNull: boolean;
}

export interface AggregateRequest {
  groupBy: GroupKey[];
  metrics: Metric[];
  filter: RowFilter | null;
  having: HavingFilter | null;
  /** The order really used: the requested terms, then every group key not among them, ascending, nulls first. */
  order: AggregateTerm[];
  pageSize: number;
  /** The order's values of the last group of the previous page (the cursor's). */
  after: CursorValue[] | null;
  /** What the next page's cursor is bound to. */
  binding: string;
  /** The parameters as given, repeated in nextUrl. */
  texts: Partial<Record<'groupBy' | 'metrics' | 'filter' | 'having' | 'sort', string>>;
}

export const MAX_GROUP_KEYS = 5;
export const MAX_METRICS = 20;
export const MAX_PAGE_SIZE = 1000;
const DEFAULT_PAGE_SIZE = 100;
const METRIC_NAME = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
const HAVING_OPS = ['_eq', '_gt', '_gte', '_lt', '_lte'] as const;
const MAX_HAVING_PARTS = 200;
const MAX_HAVING_DEPTH = 16;

const PARAMS = ['groupBy', 'metrics', 'filter', 'having', 'sort', 'pageSize', 'cursor'] as const;

/** A system column or a field of the table, by the name a request gives it. */
function columnNamed(table: FieldLookup, key: unknown): RowColumn | undefined {
  if (typeof key !== 'string') return undefined;
  if (isSystemColumn(key)) return SYSTEM_COLUMNS[key];
  const field = table.fieldsByCode.get(key);
  return field && fieldTarget(field);
}

/** A single (not multiple) link field: a group key by the linked row's id (CONTRACT §13). */
export function isSingleLink(target: RowColumn): boolean {
  return target.type.name === 'link' && !linkOptions(target.field).multiple;
}

/**
 * Whether a column can be a group key (or counted distinctly): a scalar the database compares, or
 * a single link (by the linked row's id). Records, lists, files and multiple links cannot.
 */
export function groupable(target: RowColumn): boolean {
  return target.type.sortable || isSingleLink(target);
}

/** Why a column cannot be a group key, for the 400. */
function kindOf(target: RowColumn): string {
  return target.type.name === 'link' && !isSingleLink(target) ? 'multiple link' : target.type.name;
}

function parseGroupBy(value: unknown, table: FieldLookup, details: ErrorDetail[]): GroupKey[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    details.push({ path: 'groupBy', message: 'must be an array of group keys {"field", "bucket"?, "timeZone"?}' });
    return [];
  }
  if (value.length > MAX_GROUP_KEYS) {
    details.push({ path: 'groupBy', message: `has more than ${MAX_GROUP_KEYS} group keys` });
    return [];
  }
  const keys: GroupKey[] = [];
  value.forEach((item, i) => {
    const path = `groupBy[${i}]`;
    if (!isObject(item)) {
      details.push({ path, message: 'must be an object {"field", "bucket"?, "timeZone"?}' });
      return;
    }
    for (const extra of Object.keys(item).filter((k) => !['field', 'bucket', 'timeZone'].includes(k))) {
      details.push({ path: `${path}.${extra}`, message: 'is not a group key option; use field, bucket and timeZone' });
    }
    const target = columnNamed(table, item.field);
    if (!target) {
      details.push({ path: `${path}.field`, message: typeof item.field === 'string' ? `${item.field} is neither a system column nor a field of this table` : 'must name a field' });
      return;
    }
    if (!groupable(target)) {
      details.push({ path: `${path}.field`, message: `${target.key} is a ${kindOf(target)} field, which cannot be a group key` });
      return;
    }
    if (keys.some((k) => k.key === target.key)) details.push({ path: `${path}.field`, message: `${target.key} is a group key already` });
    let bucket: Bucket | null = null;
    if (item.bucket !== undefined) {
      const allowed = BUCKETS_OF[target.type.name];
      if (!allowed) details.push({ path: `${path}.bucket`, message: `${target.key} is a ${target.type.name} field: only date, dateTime and yearMonth fields take a bucket` });
      else if (typeof item.bucket !== 'string' || !(allowed as readonly string[]).includes(item.bucket)) {
        details.push({ path: `${path}.bucket`, message: `must be one of ${allowed.join(', ')} for a ${target.type.name} field` });
      } else bucket = item.bucket as Bucket;
    }
    let timeZone: string | null = null;
    if (item.timeZone !== undefined) {
      if (target.type.name !== 'dateTime') details.push({ path: `${path}.timeZone`, message: 'applies to dateTime fields only' });
      else if (item.bucket === undefined) details.push({ path: `${path}.timeZone`, message: 'applies to a bucket: give one' });
      else if ((timeZone = canonicalTimeZone(item.timeZone)) === null) {
        details.push({ path: `${path}.timeZone`, message: `${JSON.stringify(item.timeZone)} is not an IANA time zone name (like Asia/Tokyo or UTC)` });
      }
    }
    if (bucket !== null && target.type.name === 'dateTime') timeZone ??= 'UTC';
    keys.push({ key: target.key, target, bucket, timeZone });
  });
  return keys;
}

function parseMetrics(value: unknown, table: FieldLookup, details: ErrorDetail[]): Metric[] {
  if (value === undefined) return [{ name: 'count', fn: 'count', target: null }];
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_METRICS) {
    details.push({ path: 'metrics', message: `must be an array of 1 to ${MAX_METRICS} metrics {"fn", "field"?, "as"?}` });
    return [];
  }
  const metrics: Metric[] = [];
  value.forEach((item, i) => {
    const path = `metrics[${i}]`;
    if (!isObject(item)) {
      details.push({ path, message: 'must be an object {"fn", "field"?, "as"?}' });
      return;
    }
    for (const extra of Object.keys(item).filter((k) => !['fn', 'field', 'as'].includes(k))) {
      details.push({ path: `${path}.${extra}`, message: 'is not a metric option; use fn, field and as' });
    }
    const fn = item.fn;
    if (typeof fn !== 'string' || !(METRIC_FNS as readonly string[]).includes(fn)) {
      details.push({ path: `${path}.fn`, message: `unknown metric; use ${METRIC_FNS.join(', ')}` });
      return;
    }
    let target: RowColumn | null = null;
    if (fn === 'count') {
      if (item.field !== undefined) details.push({ path: `${path}.field`, message: 'count counts rows and takes no field; use countDistinct to count values' });
    } else {
      const found = columnNamed(table, item.field);
      if (!found) {
        details.push({ path: `${path}.field`, message: typeof item.field === 'string' ? `${item.field} is neither a system column nor a field of this table` : `${fn} needs a field` });
        return;
      }
      if ((fn === 'sum' || fn === 'avg') && found.type.name !== 'number') {
        details.push({ path: `${path}.field`, message: `${fn} takes a number field; ${found.key} is a ${found.type.name} field` });
        return;
      }
      if (!groupable(found) || ((fn === 'min' || fn === 'max') && !found.type.sortable)) {
        details.push({ path: `${path}.field`, message: `${fn} cannot take ${found.key}, a ${kindOf(found)} field` });
        return;
      }
      target = found;
    }
    let name = fn === 'count' ? 'count' : `${fn}_${target?.key}`;
    if (item.as !== undefined) {
      if (typeof item.as !== 'string' || !METRIC_NAME.test(item.as)) {
        details.push({ path: `${path}.as`, message: 'must be a name of 1 to 64 letters, digits and _, starting with a letter' });
        return;
      }
      name = item.as;
    }
    if (metrics.some((m) => m.name === name)) {
      details.push({ path: `${path}${item.as === undefined ? '' : '.as'}`, message: `a metric is named ${name} already; name this one with as` });
      return;
    }
    metrics.push({ name, fn: fn as MetricFn, target });
  });
  return metrics;
}

/** The type a metric's values are compared and written as: counts, sums and averages are numbers. */
export function metricType(metric: Metric): RowColumn['type'] {
  return metric.fn === 'min' || metric.fn === 'max' ? (metric.target as RowColumn).type : fieldType('number');
}

class HavingParser {
  private parts = 0;
  constructor(
    private readonly metrics: Metric[],
    private readonly details: ErrorDetail[],
  ) {}

  private problem(path: string, message: string): null {
    this.details.push({ path, message });
    return null;
  }

  filter(value: unknown, path: string, depth: number): HavingFilter | null {
    if (++this.parts > MAX_HAVING_PARTS) return this.parts === MAX_HAVING_PARTS + 1 ? this.problem(path, `has more than ${MAX_HAVING_PARTS} parts`) : null;
    if (!isObject(value)) return this.problem(path, 'must be an object');
    if (depth > MAX_HAVING_DEPTH) return this.problem(path, `is nested more than ${MAX_HAVING_DEPTH} levels deep`);
    const items: HavingFilter[] = [];
    for (const [key, v] of Object.entries(value)) {
      const here = `${path}.${key}`;
      if (key === '_and' || key === '_or') {
        if (!Array.isArray(v) || v.length === 0) {
          this.problem(here, 'must be a non-empty array of filters');
          continue;
        }
        const subs = v.map((s, i) => this.filter(s, `${here}[${i}]`, depth + 1));
        items.push({ kind: key === '_and' ? 'and' : 'or', items: subs.filter((s): s is HavingFilter => s !== null) });
      } else if (key === '_not') {
        const sub = this.filter(v, here, depth + 1);
        if (sub) items.push({ kind: 'not', item: sub });
      } else {
        const index = this.metrics.findIndex((m) => m.name === key);
        if (index < 0) {
          const names = this.metrics.map((m) => m.name).join(', ');
          this.problem(here, `names no metric; use ${names ? `${names}, ` : ''}_and, _or or _not`);
          continue;
        }
        items.push(...this.condition(index, v, here));
      }
    }
    return { kind: 'and', items };
  }

  private condition(index: number, cond: unknown, path: string): HavingFilter[] {
    if (!isObject(cond) || Object.keys(cond).length === 0) {
      this.problem(path, 'must be an object {operator: value}');
      return [];
    }
    const metric = this.metrics[index];
    const type = metricType(metric);
    const out: HavingFilter[] = [];
    for (const [op, value] of Object.entries(cond)) {
      const here = `${path}.${op}`;
      if (op === '_isNull') {
        if (typeof value !== 'boolean') this.problem(here, 'must be true or false');
        else out.push({ kind: 'isNull', metric: index, isNull: value });
        continue;
      }
      const allowed = HAVING_OPS.filter((o) => type.filterOps.includes(o) && ORDER_OPS.includes(o));
      if (!(allowed as readonly string[]).includes(op)) {
        this.problem(here, `operator not allowed on ${metric.name}; use ${[...allowed, '_isNull'].join(', ')}`);
        continue;
      }
      if (value === null) {
        this.problem(here, 'cannot be null; use {"_isNull": true}');
        continue;
      }
      if (unstorableTextAt(value, here) !== null) {
        this.problem(here, UNSTORABLE_TEXT);
        continue;
      }
      const compareAs = fieldType(type.comparisonType ?? type.name);
      const field = metric.target?.field ?? { id: metric.name, code: metric.name, name: metric.name, type: 'number' as const, required: false, options: {} };
      const parsed = compareAs.parse(value, { ...field, type: compareAs.name, options: {} });
      if (!parsed.ok) this.problem(here, parsed.message);
      else out.push({ kind: 'cmp', metric: index, op: op as (typeof HAVING_OPS)[number], value: parsed.value });
    }
    return out;
  }
}

/** The order of the groups: the requested terms (group keys by field, metrics by name), then the other group keys. */
function parseOrder(value: unknown, groupBy: GroupKey[], metrics: Metric[], details: ErrorDetail[]): AggregateTerm[] {
  const requested =
    value === undefined
      ? []
      : parseSortSpec(value, MAX_GROUP_KEYS + MAX_METRICS, details, (key, path) => {
          const group = groupBy.findIndex((g) => g.key === key);
          if (group >= 0) return { kind: 'group' as const, index: group };
          const metric = metrics.findIndex((m) => m.name === key);
          if (metric >= 0) return { kind: 'metric' as const, index: metric };
          details.push({ path, message: 'is neither a group key nor a metric name' });
          return null;
        });
  const neverNull = (of: AggregateTerm['of']) =>
    of.kind === 'group' ? groupBy[of.index].target.system : metrics[of.index].fn === 'count' || metrics[of.index].fn === 'countDistinct';
  const order: AggregateTerm[] = requested.map(({ target, direction, nulls }) => ({ of: target, direction, nulls, neverNull: neverNull(target) }));
  groupBy.forEach((g, index) => {
    if (!order.some((t) => t.of.kind === 'group' && t.of.index === index)) {
      order.push({ of: { kind: 'group', index }, direction: 'asc', nulls: 'nullsFirst', neverNull: g.target.system });
    }
  });
  return order;
}

/** Parses and checks the query string of an aggregate against the table; every problem at once, as one 400. */
export function parseAggregate(query: Record<string, unknown>, table: FieldLookup, secret: string): AggregateRequest {
  const details: ErrorDetail[] = [];
  const params = readQuery(query, PARAMS, details);
  const pageSize = intParam('pageSize', params.pageSize, 1, MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE, details);
  const raw = {
    groupBy: jsonParam('groupBy', params.groupBy, details),
    metrics: jsonParam('metrics', params.metrics, details),
    filter: jsonParam('filter', params.filter, details),
    having: jsonParam('having', params.having, details),
    sort: jsonParam('sort', params.sort, details),
  };
  const groupBy = parseGroupBy(raw.groupBy, table, details);
  const metrics = parseMetrics(raw.metrics, table, details);
  for (const m of metrics) {
    if (groupBy.some((g) => g.key === m.name)) details.push({ path: 'metrics', message: `${m.name} is a group key: name the metric otherwise with as` });
  }
  const filter = raw.filter === undefined ? null : parseRowFilter(raw.filter, table, details);
  const having = raw.having === undefined ? null : new HavingParser(metrics, details).filter(raw.having, 'having', 0);
  const order = parseOrder(raw.sort, groupBy, metrics, details);
  throwIfInvalid(details, 'Invalid aggregate query');
  // Bound to the query and to the columns and types of what the cursor carries.
  const carried = order.map((t) => (t.of.kind === 'group' ? `g:${groupBy[t.of.index].target.column}:${groupBy[t.of.index].target.type.name}` : `m:${metricType(metrics[t.of.index]).name}`));
  const binding = cursorBinding(table.id, [raw.groupBy ?? null, raw.metrics ?? null, raw.filter ?? null, raw.having ?? null], raw.sort ?? null, carried);
  const after = params.cursor === undefined ? null : readCursor(secret, params.cursor, binding, order.length, 'groupBy, metrics, filter, having or sort');
  const texts: AggregateRequest['texts'] = {};
  for (const name of ['groupBy', 'metrics', 'filter', 'having', 'sort'] as const) if (params[name] !== undefined) texts[name] = params[name];
  return { groupBy, metrics, filter, having, order, pageSize, after, binding, texts };
}

/** The query string of the page after this one: the request's own parameters and the cursor. */
export function nextAggregateQuery(request: AggregateRequest, cursor: string): string {
  const next = new URLSearchParams(request.texts);
  next.set('pageSize', String(request.pageSize));
  next.set('cursor', cursor);
  return next.toString();
}
