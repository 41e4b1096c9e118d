import assert from 'node:assert/strict';
import type { TestApp } from './harness.ts';
import { type RefFields, type RefRow, compareValues, matchesFilter } from './reference-rows.ts';

/**
 * Aggregates (CONTRACT §13) for tests: a seeded generator of tables' rows and of random queries
 * (group keys and date buckets in time zones, metrics, filter, having, sort, page size), a walk of
 * the API's pages, and an in-memory reference written from the contract, independently of src/:
 * its wall-clock times come from Intl's formatted parts and its ISO weeks from the calendar rule.
 */

/** mulberry32: a small seeded PRNG, so a failing case can be run again. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type Rand = () => number;
export const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
export const chance = (r: Rand, p: number) => r() < p;

export const FIELDS = [
  { code: 's', name: 's', type: 'select', options: { choices: ['a', 'b', 'c', 'é'] } },
  { code: 't', name: 't', type: 'text' },
  { code: 'n', name: 'n', type: 'number' },
  { code: 'b', name: 'b', type: 'boolean' },
  { code: 'dt', name: 'dt', type: 'dateTime' },
  { code: 'd', name: 'd', type: 'date' },
  { code: 'ym', name: 'ym', type: 'yearMonth' },
  { code: 'tm', name: 'tm', type: 'time' },
] as const;
/**
 * A single link field `lk` to the table LINK_TARGET, whose rows have the ids LINK_IDS: the property
 * test adds it (randomRow and randomQuery with `link`). A link groups by the linked row's id, which
 * the reference compares as text (the ids are ASCII, so code-point order is byte order).
 */
export const LINK_TARGET = 'aggpeople';
export const LINK_IDS = ['p-1', 'p-2', 'p.3', 'P4', 'p:5'];
export const LINK_FIELD = { code: 'lk', name: 'lk', type: 'link', options: { table: LINK_TARGET } } as const;
export const REF_FIELDS: RefFields = { ...Object.fromEntries(FIELDS.map((f) => [f.code, f.type])), lk: 'text' };

export const ZONES = ['UTC', 'America/New_York', 'Europe/Berlin', 'Australia/Sydney', 'Asia/Tokyo', 'Asia/Kolkata', 'Pacific/Chatham', 'America/St_Johns'];

/** Instants around daylight-saving changes (2024, 2025) and local midnights at year, quarter and week ends. */
const EDGES = [
  '2024-03-10T07:00:00Z', // New York springs forward
  '2024-11-03T06:00:00Z', // New York falls back: 01:xx twice
  '2024-03-31T01:00:00Z', // Berlin
  '2024-10-27T01:00:00Z',
  '2024-04-06T16:00:00Z', // Sydney falls back
  '2024-10-05T16:00:00Z', // Sydney springs forward
  '2024-04-06T14:00:00Z', // Chatham (+13:45 → +12:45)
  '2024-11-03T04:30:00Z', // St John's (-02:30 → -03:30)
  '2025-03-30T01:00:00Z',
  '2024-12-31T15:00:00Z', // Tokyo's new year
  '2025-01-01T00:00:00Z',
  '2020-12-31T23:00:00Z', // Berlin's 2021; ISO 2020-W53
  '2021-01-03T23:00:00Z', // Berlin's Monday 2021-01-04
  '2024-03-31T23:00:00Z',
  '2024-06-30T14:00:00Z',
  '2024-09-30T18:30:00Z', // Kolkata's 2024-10-01
  '2024-12-29T13:00:00Z',
];
const SHIFTS = [0, 1, -1, 30 * 60_000, -30 * 60_000, 3_600_000, -3_600_000, 45 * 60_000, -90 * 60_000];

export const DATES = ['2020-12-28', '2020-12-31', '2021-01-01', '2021-01-03', '2021-01-04', '2024-02-29', '2024-03-31', '2024-04-01', '2024-06-30', '2024-07-01', '2024-09-30', '2024-10-01', '2024-12-29', '2024-12-30', '2025-01-01', '2026-12-31', '2027-01-01', '2027-01-03', '2027-01-04', '0001-01-01', '9999-12-31'];
const YEAR_MONTHS = ['2024-01', '2024-03', '2024-04', '2024-12', '2025-01', '0001-01', '9999-12'];
const TIMES = ['00:00:00', '12:30:00', '23:59:59'];
const TEXTS = ['x', 'y', 'X', 'é', 'e\u0301', '😀', '\uff01', ''];

function instant(r: Rand): string {
  if (chance(r, 0.7)) return new Date(Date.parse(pick(r, EDGES)) + pick(r, SHIFTS)).toISOString();
  return new Date(Date.UTC(2019, 0, 1) + Math.floor(r() * 8 * 365 * 86_400_000)).toISOString();
}

/** Numbers: dyadic (sums exact in any order) unless `doubles`, then any decimals, negatives and ties among them. */
function numberValue(r: Rand, doubles: boolean): number {
  if (doubles && chance(r, 0.6)) return Math.round((r() - 0.3) * 1e6) / 100 + (chance(r, 0.2) ? r() * 1e-3 : 0);
  return pick(r, [-3, -1.5, -0.25, 0, 0.5, 1, 2.75, 1000.5, 1e6, 7]);
}

export function randomRow(r: Rand, doubles = false, link = false): Record<string, unknown> {
  const orNull = <T>(p: number, v: () => T): T | null => (chance(r, p) ? null : v());
  return {
    ...(link ? { lk: orNull(0.25, () => pick(r, LINK_IDS)) } : {}),
    s: orNull(0.2, () => pick(r, ['a', 'b', 'c', 'é'])),
    t: orNull(0.2, () => pick(r, TEXTS)),
    n: orNull(0.2, () => numberValue(r, doubles)),
    b: orNull(0.2, () => chance(r, 0.5)),
    dt: orNull(0.15, () => instant(r)),
    d: orNull(0.15, () => pick(r, DATES)),
    ym: orNull(0.2, () => pick(r, YEAR_MONTHS)),
    tm: orNull(0.3, () => pick(r, TIMES)),
  };
}

// ---- queries ---------------------------------------------------------------------------------

export interface GroupSpec {
  field: string;
  bucket?: string;
  timeZone?: string;
}
export interface MetricSpec {
  fn: string;
  field?: string;
  as?: string;
}
export interface AggregateQuery {
  groupBy?: GroupSpec[];
  metrics?: MetricSpec[];
  filter?: Record<string, unknown>;
  having?: Record<string, unknown>;
  sort?: Record<string, { direction: 'asc' | 'desc'; nulls: 'nullsFirst' | 'nullsLast' }>[];
  pageSize: number;
}

const BUCKETS: Record<string, string[]> = {
  dt: ['year', 'quarter', 'month', 'week', 'day', 'hour'],
  d: ['year', 'quarter', 'month', 'week', 'day'],
  ym: ['year', 'quarter', 'month'],
};

function randomFilter(r: Rand): Record<string, unknown> | undefined {
  const one = (): Record<string, unknown> =>
    pick(r, [
      () => ({ values: { n: { [pick(r, ['_gt', '_lte', '_gte'])]: pick(r, [-1, 0, 1, 7]) } } }),
      () => ({ values: { b: { _eq: chance(r, 0.5) } } }),
      () => ({ values: { s: { _isNull: chance(r, 0.5) } } }),
      () => ({ values: { dt: { [pick(r, ['_gte', '_lt'])]: pick(r, EDGES) } } }),
      () => ({ values: { d: { _lt: pick(r, DATES) } } }),
    ])();
  return pick(r, [undefined, undefined, one, () => ({ _or: [one(), one()] }), () => ({ _not: one() })])?.();
}

export function randomQuery(r: Rand, link = false): AggregateQuery {
  const groupBy: GroupSpec[] = [];
  const codes = [...FIELDS.map((f) => f.code as string), ...(link ? [LINK_FIELD.code] : [])].sort(() => r() - 0.5);
  const keys = pick(r, [0, 1, 1, 2, 2, 3]);
  for (const code of codes.slice(0, keys)) {
    const g: GroupSpec = { field: code };
    if (BUCKETS[code] && chance(r, 0.8)) {
      g.bucket = pick(r, BUCKETS[code]);
      if (code === 'dt' && chance(r, 0.85)) g.timeZone = pick(r, ZONES);
    }
    groupBy.push(g);
  }
  const metrics: MetricSpec[] = [];
  const names = new Set<string>(groupBy.map((g) => g.field));
  for (let i = 0, n = 1 + Math.floor(r() * 4); i < n; i++) {
    const fn = pick(r, ['count', 'sum', 'avg', 'min', 'max', 'countDistinct']);
    const m: MetricSpec = { fn };
    if (fn === 'sum' || fn === 'avg') m.field = 'n';
    // min and max take sortable fields only: not a link.
    else if (fn !== 'count') m.field = pick(r, fn === 'countDistinct' ? codes : codes.filter((c) => c !== LINK_FIELD.code));
    if (chance(r, 0.3)) m.as = `m${i}`;
    const name = m.as ?? (m.field ? `${fn}_${m.field}` : fn);
    if (names.has(name)) continue;
    names.add(name);
    metrics.push(m);
  }
  const metricNames = metrics.map((m) => m.as ?? (m.field ? `${m.fn}_${m.field}` : m.fn));
  const q: AggregateQuery = { pageSize: 1 + Math.floor(r() * 6) };
  if (groupBy.length > 0) q.groupBy = groupBy;
  if (metrics.length > 0 && !(metrics.length === 1 && metrics[0].fn === 'count' && !metrics[0].as && chance(r, 0.3))) q.metrics = metrics;
  const effectiveMetrics = q.metrics ? metricNames : ['count'];
  const filter = randomFilter(r);
  if (filter) q.filter = filter;
  if (chance(r, 0.35)) {
    const i = Math.floor(r() * effectiveMetrics.length);
    const m = q.metrics ? q.metrics[i] : { fn: 'count' };
    const name = effectiveMetrics[i];
    if (m.fn === 'count' || m.fn === 'countDistinct') q.having = { [name]: { [pick(r, ['_gt', '_gte', '_lt', '_eq'])]: pick(r, [0, 1, 2, 3]) } };
    else if (m.fn === 'sum' || m.fn === 'avg') q.having = pick(r, [{ [name]: { _gt: 0 } }, { [name]: { _isNull: chance(r, 0.5) } }, { _not: { [name]: { _lte: 1 } } }]);
    else q.having = { [name]: { _isNull: chance(r, 0.5) } };
  }
  if (chance(r, 0.6)) {
    const candidates = [...groupBy.map((g) => g.field), ...effectiveMetrics].sort(() => r() - 0.5);
    const n = Math.floor(r() * Math.min(3, candidates.length)) + (candidates.length > 0 ? 1 : 0);
    q.sort = candidates.slice(0, n).map((k) => ({ [k]: { direction: pick(r, ['asc', 'desc'] as const), nulls: pick(r, ['nullsFirst', 'nullsLast'] as const) } }));
  }
  return q;
}

// ---- the reference ---------------------------------------------------------------------------

const zoneFormats = new Map<string, Intl.DateTimeFormat>();

/** `YYYY-MM-DDTHH:mm:ss` wall-clock time of an instant in a zone, from Intl's formatted parts. */
export function wallClock(iso: string, zone: string): string {
  let f = zoneFormats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
    zoneFormats.set(zone, f);
  }
  const p = Object.fromEntries(f.formatToParts(new Date(iso)).map((x) => [x.type, x.value]));
  return `${p.year.padStart(4, '0')}-${p.month}-${p.day}T${p.hour}:${p.minute}:${p.second}`;
}

/** The ISO 8601 week of a calendar date: the week (Monday first) holding its Thursday, numbered in that Thursday's year. */
export function isoWeek(date: string): string {
  const d = new Date(`${date}T00:00:00Z`);
  const weekday = (d.getUTCDay() + 6) % 7; // Monday 0
  const thursday = new Date(d.getTime() + (3 - weekday) * 86_400_000);
  const year = thursday.getUTCFullYear();
  const jan1 = new Date(0);
  jan1.setUTCFullYear(year, 0, 1);
  const week = 1 + Math.floor((thursday.getTime() - jan1.getTime()) / (7 * 86_400_000));
  return `${String(year).padStart(4, '0')}-W${String(week).padStart(2, '0')}`;
}

function bucketLabel(value: string, type: string, bucket: string, zone: string): string {
  const local = type === 'dateTime' ? wallClock(value, zone) : type === 'yearMonth' ? `${value}-01` : value;
  const year = local.slice(0, 4);
  switch (bucket) {
    case 'year':
      return year;
    case 'quarter':
      return `${year}-Q${Math.ceil(Number(local.slice(5, 7)) / 3)}`;
    case 'month':
      return local.slice(0, 7);
    case 'week':
      return isoWeek(local.slice(0, 10));
    case 'day':
      return local.slice(0, 10);
    case 'hour':
      return `${local.slice(0, 10)}T${local.slice(11, 13)}`;
  }
  throw new Error(`reference: bucket ${bucket}`);
}

export interface Group {
  group: Record<string, unknown>;
  metrics: Record<string, unknown>;
}

function metricName(m: MetricSpec): string {
  return m.as ?? (m.field ? `${m.fn}_${m.field}` : m.fn);
}

/** What a group key or metric is compared as: labels as text, values as their field, numbers as numbers. */
function termType(q: AggregateQuery, key: string): string {
  const g = q.groupBy?.find((x) => x.field === key);
  if (g) return g.bucket ? 'yearMonth' /* fixed-width ASCII */ : REF_FIELDS[g.field];
  const m = (q.metrics ?? [{ fn: 'count' }]).find((x) => metricName(x) === key) as MetricSpec;
  return m.fn === 'min' || m.fn === 'max' ? REF_FIELDS[m.field as string] : 'number';
}

function matchesHaving(q: AggregateQuery, metrics: Record<string, unknown>, having: Record<string, unknown>): boolean {
  return Object.entries(having).every(([key, v]) => {
    if (key === '_and') return (v as Record<string, unknown>[]).every((h) => matchesHaving(q, metrics, h));
    if (key === '_or') return (v as Record<string, unknown>[]).some((h) => matchesHaving(q, metrics, h));
    if (key === '_not') return !matchesHaving(q, metrics, v as Record<string, unknown>);
    const value = metrics[key];
    return Object.entries(v as Record<string, unknown>).every(([op, operand]) => {
      if (op === '_isNull') return (value === null) === operand;
      if (value === null) return false;
      const c = compareValues(termType(q, key) as never, value, operand);
      return op === '_eq' ? c === 0 : op === '_gt' ? c > 0 : op === '_gte' ? c >= 0 : op === '_lt' ? c < 0 : c <= 0;
    });
  });
}

/** Every group the query answers, in its order. */
export function referenceGroups(rows: RefRow[], q: AggregateQuery): Group[] {
  const matching = q.filter ? rows.filter((row) => matchesFilter(REF_FIELDS, row, q.filter as Record<string, unknown>)) : rows;
  const groupBy = q.groupBy ?? [];
  const metrics = q.metrics ?? [{ fn: 'count' }];
  const byKey = new Map<string, { group: Record<string, unknown>; rows: RefRow[] }>();
  if (groupBy.length === 0) byKey.set('', { group: {}, rows: [] });
  for (const row of matching) {
    const group: Record<string, unknown> = {};
    for (const g of groupBy) {
      const v = row.values[g.field] ?? null;
      group[g.field] = v === null || !g.bucket ? v : bucketLabel(v as string, REF_FIELDS[g.field], g.bucket, g.timeZone ?? 'UTC');
    }
    const k = JSON.stringify(groupBy.map((g) => group[g.field]));
    const entry = byKey.get(groupBy.length === 0 ? '' : k) ?? { group, rows: [] };
    entry.rows.push(row);
    byKey.set(groupBy.length === 0 ? '' : k, entry);
  }
  const groups: Group[] = [];
  for (const { group, rows: members } of byKey.values()) {
    const out: Record<string, unknown> = {};
    for (const m of metrics) {
      const values = m.field ? members.map((row) => row.values[m.field as string] ?? null).filter((v) => v !== null) : [];
      const type = m.field ? REF_FIELDS[m.field] : 'number';
      let value: unknown;
      switch (m.fn) {
        case 'count':
          value = members.length;
          break;
        case 'countDistinct':
          value = new Set(values.map((v) => JSON.stringify(v))).size;
          break;
        case 'sum':
          value = values.length === 0 ? null : (values as number[]).reduce((a, b) => a + b, 0);
          break;
        case 'avg':
          value = values.length === 0 ? null : (values as number[]).reduce((a, b) => a + b, 0) / values.length;
          break;
        case 'min':
        case 'max': {
          const sign = m.fn === 'min' ? 1 : -1;
          value = values.length === 0 ? null : values.reduce((a, b) => (compareValues(type, a, b) * sign <= 0 ? a : b));
          break;
        }
      }
      out[metricName(m)] = value;
    }
    if (q.having && !matchesHaving(q, out, q.having)) continue;
    groups.push({ group, metrics: out });
  }
  const terms = [
    ...(q.sort ?? []).map((s) => {
      const [key, spec] = Object.entries(s)[0];
      return { key, ...spec };
    }),
  ];
  for (const g of groupBy) if (!terms.some((t) => t.key === g.field)) terms.push({ key: g.field, direction: 'asc', nulls: 'nullsFirst' });
  const valueOf = (x: Group, key: string) => (Object.hasOwn(x.group, key) ? x.group[key] : x.metrics[key]) ?? null;
  return groups.sort((a, b) => {
    for (const t of terms) {
      const va = valueOf(a, t.key);
      const vb = valueOf(b, t.key);
      let c: number;
      if (va === null && vb === null) c = 0;
      else if (va === null) c = t.nulls === 'nullsFirst' ? -1 : 1;
      else if (vb === null) c = t.nulls === 'nullsFirst' ? 1 : -1;
      else c = compareValues(termType(q, t.key) as never, va, vb) * (t.direction === 'desc' ? -1 : 1);
      if (c !== 0) return c;
    }
    return 0;
  });
}

// ---- the API ---------------------------------------------------------------------------------

export function queryParams(q: AggregateQuery): Record<string, unknown> {
  return { groupBy: q.groupBy, metrics: q.metrics, filter: q.filter, having: q.having, sort: q.sort, pageSize: String(q.pageSize) };
}

const ORIGIN = 'http://rowhouse.test';

/** Every page of the query's groups, following nextUrl (and checking Link) to the end. */
export async function walkGroups(t: TestApp, table: string, q: AggregateQuery): Promise<Group[][]> {
  const pages: Group[][] = [];
  let r = await t.get(`/api/tables/${table}/rows-aggregate`, { query: queryParams(q) });
  for (;;) {
    assert.equal(r.status, 200, `${JSON.stringify(q)}: ${r.text}`);
    if (r.body.nextUrl === null) assert.equal(r.headers.link, undefined);
    else assert.equal(r.headers.link, `<${r.body.nextUrl}>; rel="next"`);
    pages.push(r.body.data);
    if (r.body.nextUrl === null) return pages;
    assert.ok(pages.length <= 1000, 'the walk does not end');
    r = await t.get(r.body.nextUrl.slice(ORIGIN.length));
  }
}

/** Relative 1e-9 for doubles (sums and averages); everything else exactly. */
export function assertSameGroups(actual: Group[], expected: Group[], context: string): void {
  assert.equal(actual.length, expected.length, `${context}: ${actual.length} groups, expected ${expected.length}\n${JSON.stringify(actual)}\n${JSON.stringify(expected)}`);
  actual.forEach((a, i) => {
    const e = expected[i];
    assert.deepEqual(a.group, e.group, `${context}: group ${i}`);
    assert.deepEqual(Object.keys(a.metrics), Object.keys(e.metrics), `${context}: metric names of group ${i}`);
    for (const [k, v] of Object.entries(e.metrics)) {
      const got = a.metrics[k];
      if (typeof v === 'number' && typeof got === 'number' && !Number.isInteger(v)) {
        assert.ok(Math.abs(got - v) <= 1e-9 * Math.max(Math.abs(v), Math.abs(got)), `${context}: group ${i} metric ${k}: ${got} against ${v}`);
      } else assert.deepEqual(got, v, `${context}: group ${i} metric ${k}`);
    }
  });
}
