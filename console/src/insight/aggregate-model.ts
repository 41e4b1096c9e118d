import type { Field } from '../types.ts';

/**
 * The chart's question as the aggregate API takes it (CONTRACT §13): one group key (a field, with a
 * bucket for date-like fields), one metric. Pure (no DOM), so the suite's Node tests can import it.
 */
export type Bucket = '' | 'year' | 'quarter' | 'month' | 'week' | 'day' | 'hour';
export type MetricFn = 'count' | 'sum' | 'avg' | 'min' | 'max' | 'countDistinct';

export interface ChartQuery {
  groupBy: string; // a field code, or createdAt / updatedAt
  bucket: Bucket;
  fn: MetricFn;
  field: string; // the metric's field (not for count)
}

export const METRIC_LABELS: Record<MetricFn, string> = { count: 'count of rows', sum: 'sum', avg: 'average', min: 'minimum', max: 'maximum', countDistinct: 'count of distinct values' };

/** The fields a group may be keyed by: not records, lists, files or multiple links. */
export const groupable = (f: Field) => !['record', 'list', 'file'].includes(f.type) && !(f.type === 'link' && f.options.multiple === true);

/** The buckets a key of this type takes (none for a type that is not date-like). */
export function bucketsOf(type: string): Bucket[] {
  if (type === 'dateTime' || type === 'system') return ['', 'year', 'quarter', 'month', 'week', 'day', 'hour'];
  if (type === 'date') return ['', 'year', 'quarter', 'month', 'week', 'day'];
  if (type === 'yearMonth') return ['', 'year', 'quarter', 'month'];
  return [''];
}

/** The fields a metric may be over: numbers for sum and average, sortable types for min and max, group-able ones for distinct counts. */
export function metricFields(fn: MetricFn, fields: Field[]): Field[] {
  if (fn === 'count') return [];
  if (fn === 'sum' || fn === 'avg') return fields.filter((f) => f.type === 'number');
  if (fn === 'min' || fn === 'max') return fields.filter((f) => ['number', 'text', 'date', 'dateTime', 'time', 'yearMonth', 'select'].includes(f.type));
  return fields.filter(groupable);
}

/** The aggregate request's query string for a chart of a view (its filter as JSON text, or null). */
export function aggregateQuery(q: ChartQuery, filter: string | null): string {
  const params = new URLSearchParams();
  params.set('groupBy', JSON.stringify([{ field: q.groupBy, ...(q.bucket ? { bucket: q.bucket } : {}) }]));
  params.set('metrics', JSON.stringify([q.fn === 'count' ? { fn: 'count', as: 'value' } : { fn: q.fn, field: q.field, as: 'value' }]));
  params.set('pageSize', '1000');
  if (filter) params.set('filter', filter);
  return params.toString();
}

export interface Point {
  label: string;
  value: number | null;
}

/** The answer's groups as labelled points (a null key shows as “(empty)”; a non-number metric, as min of a date, has no height). */
export function points(data: { group: Record<string, unknown>; metrics: Record<string, unknown> }[], groupBy: string): Point[] {
  return data.map((d) => {
    const key = d.group[groupBy];
    const v = d.metrics.value;
    return { label: key === null || key === undefined ? '(empty)' : String(key), value: typeof v === 'number' ? v : null };
  });
}
