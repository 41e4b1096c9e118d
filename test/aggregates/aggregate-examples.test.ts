import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { sql } from 'kysely';
import { type Reply, type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';

/**
 * GET /rows-aggregate (CONTRACT §13) by example, on both databases: the docs/api.md examples
 * (open orders per status, revenue per month in Asia/Tokyo, customers with more than five orders),
 * metrics over nulls and empty selections, date buckets at ISO week-year, quarter and DST
 * boundaries, paging with nextUrl and Link, and every bad input the issue lists as a 400.
 */

const ORIGIN = 'http://rowhouse.test';
const URL_ = '/api/tables/orders/rows-aggregate';

function expectLink(reply: Reply): void {
  if (reply.body.nextUrl === null) assert.equal(reply.headers.link, undefined);
  else assert.equal(reply.headers.link, `<${reply.body.nextUrl}>; rel="next"`);
}

eachDatabase('aggregates: examples', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(kind);
    const r = await t.post('/api/tables', {
      code: 'orders',
      name: 'Orders',
      fields: [
        { code: 'status', name: 'Status', type: 'select', options: { choices: ['open', 'paid', 'void'] } },
        { code: 'customer', name: 'Customer', type: 'text' },
        { code: 'amount', name: 'Amount', type: 'number' },
        { code: 'paid', name: 'Paid', type: 'boolean' },
        { code: 'dueAt', name: 'Due at', type: 'dateTime' },
        { code: 'orderedOn', name: 'Ordered on', type: 'date' },
        { code: 'period', name: 'Period', type: 'yearMonth' },
        { code: 'tags', name: 'Tags', type: 'list' },
        { code: 'meta', name: 'Meta', type: 'record' },
        { code: 'scan', name: 'Scan', type: 'file' },
      ],
    });
    assert.equal(r.status, 201, r.text);
    const rows = [
      { status: 'open', customer: 'acme', amount: 10, paid: false, dueAt: '2025-12-31T15:30:00Z', orderedOn: '2021-01-03', period: '2024-03' },
      { status: 'open', customer: 'acme', amount: 20.5, paid: false, dueAt: '2026-01-31T14:59:59.999Z', orderedOn: '2021-01-04', period: '2024-04' },
      { status: 'paid', customer: 'acme', amount: -5, paid: true, dueAt: '2026-01-31T15:00:00Z', orderedOn: '2024-12-30', period: '2024-12' },
      { status: 'paid', customer: 'bolt', amount: null, paid: true, dueAt: null, orderedOn: '2020-12-31', period: null },
      { status: null, customer: 'bolt', amount: 7, paid: null, dueAt: '2026-03-08T06:30:00Z', orderedOn: null, period: '2024-01' },
      { status: 'open', customer: 'acme', amount: 1, paid: false, dueAt: '2026-03-08T07:30:00Z', orderedOn: '2024-03-31', period: '2024-01' },
      { status: 'open', customer: 'acme', amount: 2, paid: false, dueAt: '2026-11-01T05:30:00Z', orderedOn: '2024-04-01', period: '2024-01' },
      { status: 'open', customer: 'acme', amount: 3, paid: false, dueAt: '2026-11-01T06:30:00Z', orderedOn: '2024-04-01', period: '2024-01' },
    ];
    const b = await t.post('/api/tables/orders/rows-bulk', { data: rows.map((values) => ({ values })) });
    assert.equal(b.status, 201, b.text);
  });
  after(() => t.close());

  const agg = (query: Record<string, unknown>) => t.get(URL_, { query });

  it('open orders per status, and one group {} without groupBy', async () => {
    const r = await agg({ groupBy: [{ field: 'status' }] });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, {
      data: [
        { group: { status: null }, metrics: { count: 1 } },
        { group: { status: 'open' }, metrics: { count: 5 } },
        { group: { status: 'paid' }, metrics: { count: 2 } },
      ],
      nextUrl: null,
    });
    const open = await agg({ filter: { values: { status: { _eq: 'open' } } } });
    assert.deepEqual(open.body, { data: [{ group: {}, metrics: { count: 5 } }], nextUrl: null });
    const none = await agg({ filter: { values: { status: { _eq: 'void' } } }, metrics: [{ fn: 'count' }, { fn: 'sum', field: 'amount' }, { fn: 'avg', field: 'amount' }, { fn: 'min', field: 'dueAt' }, { fn: 'countDistinct', field: 'customer' }] });
    assert.deepEqual(none.body.data, [{ group: {}, metrics: { count: 0, sum_amount: null, avg_amount: null, min_dueAt: null, countDistinct_customer: 0 } }]);
    const noneGrouped = await agg({ groupBy: [{ field: 'status' }], filter: { values: { status: { _eq: 'void' } } } });
    assert.deepEqual(noneGrouped.body, { data: [], nextUrl: null });
  });

  it('metrics skip nulls but count, in the field formats', async () => {
    const r = await agg({
      groupBy: [{ field: 'customer' }],
      metrics: [
        { fn: 'count' },
        { fn: 'sum', field: 'amount', as: 'total' },
        { fn: 'avg', field: 'amount' },
        { fn: 'min', field: 'dueAt' },
        { fn: 'max', field: 'paid' },
        { fn: 'min', field: 'paid' },
        { fn: 'countDistinct', field: 'status' },
        { fn: 'max', field: 'orderedOn' },
      ],
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.data, [
      {
        group: { customer: 'acme' },
        metrics: { count: 6, total: 31.5, avg_amount: 5.25, min_dueAt: '2025-12-31T15:30:00.000Z', max_paid: true, min_paid: false, countDistinct_status: 2, max_orderedOn: '2024-12-30' },
      },
      {
        group: { customer: 'bolt' },
        metrics: { count: 2, total: 7, avg_amount: 7, min_dueAt: '2026-03-08T06:30:00.000Z', max_paid: true, min_paid: true, countDistinct_status: 1, max_orderedOn: '2020-12-31' },
      },
    ]);
  });

  it('revenue per month in Asia/Tokyo: the local month, not the UTC one', async () => {
    const r = await agg({ groupBy: [{ field: 'dueAt', bucket: 'month', timeZone: 'Asia/Tokyo' }], metrics: [{ fn: 'sum', field: 'amount', as: 'revenue' }] });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.data, [
      { group: { dueAt: null }, metrics: { revenue: null } },
      { group: { dueAt: '2026-01' }, metrics: { revenue: 30.5 } },
      { group: { dueAt: '2026-02' }, metrics: { revenue: -5 } },
      { group: { dueAt: '2026-03' }, metrics: { revenue: 8 } },
      { group: { dueAt: '2026-11' }, metrics: { revenue: 5 } },
    ]);
    const utc = await agg({ groupBy: [{ field: 'dueAt', bucket: 'month' }], metrics: [{ fn: 'sum', field: 'amount', as: 'revenue' }] });
    assert.deepEqual(utc.body.data.map((g: any) => [g.group.dueAt, g.metrics.revenue]), [[null, null], ['2025-12', 10], ['2026-01', 15.5], ['2026-03', 8], ['2026-11', 5]]);
  });

  it('hours across daylight-saving changes: the skipped hour is absent, both instants of the repeated hour share one group', async () => {
    const r = await agg({ groupBy: [{ field: 'dueAt', bucket: 'hour', timeZone: 'America/New_York' }], filter: { values: { dueAt: { _gte: '2026-03-01T00:00:00Z' } } } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.data, [
      // 2026-03-08: 06:30Z is 01:30 EST; 07:30Z is 03:30 EDT (02:xx does not exist).
      { group: { dueAt: '2026-03-08T01' }, metrics: { count: 1 } },
      { group: { dueAt: '2026-03-08T03' }, metrics: { count: 1 } },
      // 2026-11-01: 05:30Z is 01:30 EDT and 06:30Z is 01:30 EST: one local hour.
      { group: { dueAt: '2026-11-01T01' }, metrics: { count: 2 } },
    ]);
  });

  it('ISO weeks, quarters, years and days of dates and year-months', async () => {
    const week = await agg({ groupBy: [{ field: 'orderedOn', bucket: 'week' }] });
    assert.deepEqual(week.body.data.map((g: any) => [g.group.orderedOn, g.metrics.count]), [
      [null, 1],
      ['2020-W53', 2], // 2020-12-31 and 2021-01-03 (a Sunday)
      ['2021-W01', 1], // 2021-01-04, a Monday
      ['2024-W13', 1], // 2024-03-31
      ['2024-W14', 2],
      ['2025-W01', 1], // 2024-12-30: ISO week-year 2025
    ]);
    const quarter = await agg({ groupBy: [{ field: 'orderedOn', bucket: 'quarter' }] });
    assert.deepEqual(quarter.body.data.map((g: any) => [g.group.orderedOn, g.metrics.count]), [[null, 1], ['2020-Q4', 1], ['2021-Q1', 2], ['2024-Q1', 1], ['2024-Q2', 2], ['2024-Q4', 1]]);
    const ym = await agg({ groupBy: [{ field: 'period', bucket: 'quarter' }, { field: 'paid' }] });
    assert.deepEqual(ym.body.data.map((g: any) => [g.group.period, g.group.paid, g.metrics.count]), [[null, true, 1], ['2024-Q1', null, 1], ['2024-Q1', false, 4], ['2024-Q2', false, 1], ['2024-Q4', true, 1]]);
    const year = await agg({ groupBy: [{ field: 'createdAt', bucket: 'year', timeZone: 'Pacific/Kiritimati' }] });
    assert.equal(year.body.data.length >= 1, true);
    const day = await agg({ groupBy: [{ field: 'dueAt', bucket: 'day', timeZone: 'Asia/Kolkata' }], filter: { values: { dueAt: { _lt: '2026-02-01T00:00:00Z' } } } });
    assert.deepEqual(day.body.data.map((g: any) => g.group.dueAt), ['2025-12-31', '2026-01-31']);
  });

  it('customers with more than five orders via having, sorted by a metric', async () => {
    const r = await agg({ groupBy: [{ field: 'customer' }], having: { count: { _gt: 5 } } });
    assert.deepEqual(r.body.data, [{ group: { customer: 'acme' }, metrics: { count: 6 } }]);
    const s = await agg({
      groupBy: [{ field: 'customer' }, { field: 'status' }],
      metrics: [{ fn: 'count', as: 'orders' }, { fn: 'sum', field: 'amount' }],
      having: { _or: [{ orders: { _gte: 2 } }, { sum_amount: { _isNull: true } }], _not: { sum_amount: { _lt: 0 } } },
      sort: [{ orders: { direction: 'desc', nulls: 'nullsLast' } }],
    });
    assert.equal(s.status, 200, s.text);
    assert.deepEqual(s.body.data.map((g: any) => [g.group.customer, g.group.status, g.metrics.orders]), [['acme', 'open', 5], ['bolt', 'paid', 1]]);
  });

  it('pages over groups with nextUrl and Link; a cursor with other parameters or altered is a 400', async () => {
    const query = { groupBy: [{ field: 'orderedOn', bucket: 'day' }], sort: [{ count: { direction: 'desc', nulls: 'nullsLast' } }], pageSize: '2' };
    const seen: unknown[] = [];
    let r = await agg(query);
    for (;;) {
      assert.equal(r.status, 200, r.text);
      expectLink(r);
      seen.push(...r.body.data.map((g: any) => [g.group.orderedOn, g.metrics.count]));
      if (r.body.nextUrl === null) break;
      assert.ok(r.body.nextUrl.startsWith(`${ORIGIN}${URL_}?`));
      r = await t.get(r.body.nextUrl.slice(ORIGIN.length));
    }
    assert.deepEqual(seen, [['2024-04-01', 2], [null, 1], ['2020-12-31', 1], ['2021-01-03', 1], ['2021-01-04', 1], ['2024-03-31', 1], ['2024-12-30', 1]]);
    const first = await agg(query);
    const cursor = new URL(first.body.nextUrl).searchParams.get('cursor') as string;
    for (const other of [{ ...query, groupBy: [{ field: 'orderedOn', bucket: 'week' }] }, { ...query, filter: { values: { amount: { _gt: 0 } } } }, { ...query, having: { count: { _gt: 0 } } }, { ...query, sort: undefined }, { ...query, metrics: [{ fn: 'count', as: 'n' }], sort: [{ n: { direction: 'desc', nulls: 'nullsLast' } }] }]) {
      const bad = await agg({ ...other, cursor });
      expectError(bad, 400);
      assert.match(bad.body.message, /cursor belongs to another groupBy, metrics, filter, having or sort/);
    }
    const smaller = await agg({ ...query, pageSize: '5', cursor });
    assert.deepEqual(smaller.body.data.map((g: any) => [g.group.orderedOn, g.metrics.count]), seen.slice(2, 7));
    const altered = cursor.slice(0, -1) + (cursor.endsWith('A') ? 'B' : 'A');
    assert.match(expectError(await agg({ ...query, cursor: altered }), 400).message as string, /cursor/);
  });

  it('a time zone the database does not know is read as the request\'s fault (a 400), not the service\'s', async () => {
    const refused = await sql`select now() at time zone ${'Mars/Olympus'}::text`.execute(t.database.db).then(
      () => null,
      (err: unknown) => err,
    );
    // SQLite never sees a zone (the service converts); PostgreSQL refuses one its data lacks.
    if (kind === 'postgres') assert.equal(t.database.dialect.aggregates.isUnknownTimeZone(refused), true);
    else assert.equal(t.database.dialect.aggregates.isUnknownTimeZone(new Error('time zone "x" not recognized')), false);
    assert.equal(t.database.dialect.aggregates.isUnknownTimeZone(new Error('no such column')), false);
  });

  it('a sum beyond the range of a double is a 400 on both databases, not a 500 or a null', async () => {
    assert.equal((await t.post('/api/tables', { code: 'huge', name: 'huge', fields: [{ code: 'n', name: 'n', type: 'number' }, { code: 'k', name: 'k', type: 'text' }] })).status, 201);
    const rows = [{ n: 1.5e308, k: 'a' }, { n: 1.5e308, k: 'a' }, { n: 1, k: 'b' }];
    assert.equal((await t.post('/api/tables/huge/rows-bulk', { data: rows.map((values) => ({ values })) })).status, 201);
    for (const fn of ['sum', 'avg']) {
      const r = await t.get('/api/tables/huge/rows-aggregate', { query: { groupBy: [{ field: 'k' }], metrics: [{ fn, field: 'n' }] } });
      assert.match(expectError(r, 400).message as string, /beyond the range of a double/);
    }
    const fine = await t.get('/api/tables/huge/rows-aggregate', { query: { groupBy: [{ field: 'k' }], metrics: [{ fn: 'max', field: 'n' }], filter: { values: { n: { _lt: 2 } } } } });
    assert.deepEqual(fine.body.data, [{ group: { k: 'b' }, metrics: { max_n: 1 } }]);
  });

  const badCases: [string, Record<string, unknown>, RegExp][] = [
    ['unknown group field', { groupBy: [{ field: 'nope' }] }, /groupBy\[0\]\.field/],
    ['unknown metric', { metrics: [{ fn: 'median', field: 'amount' }] }, /metrics\[0\]\.fn/],
    ['unknown metric field', { metrics: [{ fn: 'max', field: 'nope' }] }, /metrics\[0\]\.field/],
    ['sum of a non-number', { metrics: [{ fn: 'sum', field: 'customer' }] }, /metrics\[0\]\.field.*number/],
    ['avg of a non-number', { metrics: [{ fn: 'avg', field: 'dueAt' }] }, /metrics\[0\]\.field.*number/],
    ['record group key', { groupBy: [{ field: 'meta' }] }, /groupBy\[0\]\.field.*record/],
    ['list group key', { groupBy: [{ field: 'tags' }] }, /groupBy\[0\]\.field.*list/],
    ['file group key', { groupBy: [{ field: 'scan' }] }, /groupBy\[0\]\.field.*scan is a file field/],
    ['countDistinct of a list', { metrics: [{ fn: 'countDistinct', field: 'tags' }] }, /metrics\[0\]\.field/],
    ['countDistinct of a file', { metrics: [{ fn: 'countDistinct', field: 'scan' }] }, /metrics\[0\]\.field.*scan, a file field/],
    ['max of a record', { metrics: [{ fn: 'max', field: 'meta' }] }, /metrics\[0\]\.field.*meta, a record field/],
    ['sum of a count', { metrics: [{ fn: 'sum' }] }, /metrics\[0\]\.field.*sum needs a field/],
    ['bucket on a non-date', { groupBy: [{ field: 'amount', bucket: 'month' }] }, /groupBy\[0\]\.bucket/],
    ['hour on a date', { groupBy: [{ field: 'orderedOn', bucket: 'hour' }] }, /groupBy\[0\]\.bucket/],
    ['week on a yearMonth', { groupBy: [{ field: 'period', bucket: 'week' }] }, /groupBy\[0\]\.bucket/],
    ['unknown bucket', { groupBy: [{ field: 'dueAt', bucket: 'fortnight' }] }, /groupBy\[0\]\.bucket/],
    ['unknown time zone', { groupBy: [{ field: 'dueAt', bucket: 'day', timeZone: 'Mars/Olympus' }] }, /groupBy\[0\]\.timeZone/],
    ['an offset is no zone name', { groupBy: [{ field: 'dueAt', bucket: 'day', timeZone: '+09:00' }] }, /groupBy\[0\]\.timeZone/],
    ['time zone without a bucket', { groupBy: [{ field: 'dueAt', timeZone: 'Asia/Tokyo' }] }, /groupBy\[0\]\.timeZone.*bucket/],
    ['time zone on a date', { groupBy: [{ field: 'orderedOn', bucket: 'day', timeZone: 'Asia/Tokyo' }] }, /groupBy\[0\]\.timeZone/],
    ['more than 5 group keys', { groupBy: ['status', 'customer', 'amount', 'paid', 'dueAt', 'orderedOn'].map((field) => ({ field })) }, /groupBy/],
    ['more than 20 metrics', { metrics: Array.from({ length: 21 }, (_, i) => ({ fn: 'count', as: `c${i}` })) }, /metrics/],
    ['no metrics', { metrics: [] }, /metrics/],
    ['two metrics with one name', { metrics: [{ fn: 'count' }, { fn: 'count' }] }, /metrics\[1\]/],
    ['a metric named as a group key', { groupBy: [{ field: 'status' }], metrics: [{ fn: 'count', as: 'status' }] }, /metrics/],
    ['having naming no metric', { having: { amount: { _gt: 1 } } }, /having\.amount/],
    ['having with a bad value', { having: { count: { _gt: 'many' } } }, /having\.count\._gt/],
    ['having with U+0000', { metrics: [{ fn: 'max', field: 'customer' }], having: { max_customer: { _eq: 'a\u0000b' } } }, /having\.max_customer\._eq/],
    ['sort by what is neither', { groupBy: [{ field: 'status' }], sort: [{ amount: { direction: 'asc', nulls: 'nullsFirst' } }] }, /sort\[0\]\.amount/],
    ['pageSize 0', { pageSize: '0' }, /pageSize/],
    ['pageSize 1001', { pageSize: '1001' }, /pageSize/],
    ['pageSize not an integer', { pageSize: '2.5' }, /pageSize/],
    ['a bad filter', { filter: { values: { nope: { _eq: 1 } } } }, /filter\.values\.nope/],
    ['an unknown parameter', { limit: '3' }, /limit/],
    ['groupBy not JSON', { groupBy: '[{' }, /groupBy/],
  ];
  for (const [title, query, detail] of badCases) {
    it(`400: ${title}`, async () => {
      const r = await agg(query);
      const body = expectError(r, 400);
      assert.match(JSON.stringify(body.details ?? body.message), detail, r.text);
    });
  }
});
