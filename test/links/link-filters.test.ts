import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';
import { shop } from './support.ts';

/** Filters on link fields (CONTRACT §11): _has, _eq, _isNull, _some, _none, _every, nested through links, in SQL. */

eachDatabase('links: filters', (kind) => {
  let t: TestApp;
  let s: Awaited<ReturnType<typeof shop>>;
  before(async () => {
    t = await startApp(kind);
    s = await shop(t);
    await t.post(`/api/tables/${s.customers}/rows-bulk`, {
      data: [
        { id: 'jp1', values: { country: 'JP' } },
        { id: 'jp2', values: { country: 'JP' } },
        { id: 'fr1', values: { country: 'FR' } },
        { id: 'none', values: { country: 'JP' } },
      ],
    });
    await t.post(`/api/tables/${s.orders}/rows-bulk`, {
      data: [
        { id: 'o1', values: { no: 1, customer: 'jp1' } },
        { id: 'o2', values: { no: 2, customer: 'fr1' } },
        { id: 'o3', values: { no: 3, customer: 'jp2' } },
        { id: 'o4', values: { no: 4, customer: 'jp1' } },
        { id: 'o5', values: { no: 5 } },
      ],
    });
    await t.post(`/api/tables/${s.lines}/rows-bulk`, {
      data: [
        { id: 'l1', values: { order: 'o1', sku: 'apple' } },
        { id: 'l2', values: { order: 'o1', sku: 'pear' } },
        { id: 'l3', values: { order: 'o2', sku: 'apple' } },
        { id: 'l4', values: { order: 'o3', sku: 'plum' } },
        { id: 'l5', values: { order: 'o4', sku: 'apple' } },
      ],
    });
  });
  after(() => t.close());

  async function ids(table: string, filter: unknown, sort?: unknown): Promise<string[]> {
    const r = await t.get(`/api/tables/${table}/rows`, { query: { filter, ...(sort ? { sort } : {}), pageSize: '200' } });
    assert.equal(r.status, 200, r.text);
    return r.body.data.map((row: { id: string }) => row.id).sort();
  }

  it('_some through a single link, sorted by an indexed field, and paged with the cursor', async () => {
    const filter = { values: { customer: { _some: { values: { country: { _eq: 'JP' } } } } } };
    assert.deepEqual(await ids(s.orders, filter), ['o1', 'o3', 'o4']);
    const first = await t.get(`/api/tables/${s.orders}/rows`, { query: { filter, sort: [{ no: { direction: 'desc', nulls: 'nullsLast' } }], pageSize: '2' } });
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body.data.map((r: { id: string }) => r.id), ['o4', 'o3']);
    const next = await t.get((first.body.nextUrl as string).replace(/^https?:\/\/[^/]+/, ''));
    assert.deepEqual(next.body.data.map((r: { id: string }) => r.id), ['o1']);
  });

  it('_has and _eq name a linked row; _isNull finds rows without links', async () => {
    assert.deepEqual(await ids(s.orders, { values: { customer: { _eq: 'jp1' } } }), ['o1', 'o4']);
    assert.deepEqual(await ids(s.customers, { values: { orders: { _has: 'o3' } } }), ['jp2']);
    assert.deepEqual(await ids(s.orders, { values: { customer: { _isNull: true } } }), ['o5']);
    assert.deepEqual(await ids(s.customers, { values: { orders: { _isNull: true } } }), ['none']);
    assert.deepEqual(await ids(s.customers, { values: { orders: { _isNull: false } } }), ['fr1', 'jp1', 'jp2']);
  });

  it('_none and _every (true for no links), and _not around a link filter', async () => {
    const apple = { values: { sku: { _eq: 'apple' } } };
    assert.deepEqual(await ids(s.orders, { values: { lines: { _some: apple } } }), ['o1', 'o2', 'o4']);
    assert.deepEqual(await ids(s.orders, { values: { lines: { _none: apple } } }), ['o3', 'o5']);
    assert.deepEqual(await ids(s.orders, { values: { lines: { _every: apple } } }), ['o2', 'o4', 'o5']);
    assert.deepEqual(await ids(s.orders, { _not: { values: { lines: { _every: apple } } } }), ['o1', 'o3']);
  });

  it('nests through two and three links', async () => {
    // Customers with an order that has an apple line.
    const twoDeep = { values: { orders: { _some: { values: { lines: { _some: { values: { sku: { _eq: 'apple' } } } } } } } } };
    assert.deepEqual(await ids(s.customers, twoDeep), ['fr1', 'jp1']);
    // Lines whose order's customer has an order with a plum line (jp2 only: l4).
    const threeDeep = { values: { order: { _some: { values: { customer: { _some: { values: { orders: { _some: { values: { lines: { _has: 'l4' } } } } } } } } } } } };
    assert.deepEqual(await ids(s.lines, threeDeep), ['l4']);
    // Every order of the customer is JP... through the back link: customers all of whose orders have only apple lines.
    const every = { values: { orders: { _every: { values: { lines: { _every: { values: { sku: { _eq: 'apple' } } } } } } } } };
    assert.deepEqual(await ids(s.customers, every), ['fr1', 'none']);
  });

  it('an aggregate\'s filter looks through links as a list\'s does', async () => {
    const filter = { values: { customer: { _some: { values: { country: { _eq: 'JP' } } } } } };
    const r = await t.get(`/api/tables/${s.orders}/rows-aggregate`, { query: { filter, metrics: [{ fn: 'count' }, { fn: 'sum', field: 'no' }] } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.data, [{ group: {}, metrics: { count: 3, sum_no: 8 } }]);
  });

  it('refuses bad link filters and link sort keys with a 400 naming the field', async () => {
    const bad = async (table: string, query: Record<string, unknown>, pattern: RegExp) => {
      const body = expectError(await t.get(`/api/tables/${table}/rows`, { query }), 400);
      assert.match(JSON.stringify(body), pattern);
    };
    await bad(s.customers, { filter: { values: { orders: { _eq: 'o1' } } } }, /orders/);
    await bad(s.orders, { filter: { values: { customer: { _gt: 'a' } } } }, /customer/);
    await bad(s.orders, { filter: { values: { customer: { _some: { values: { nope: { _eq: 1 } } } } } } }, /nope/);
    await bad(s.orders, { filter: { values: { customer: { _has: 12 } } } }, /customer/);
    await bad(s.orders, { sort: [{ customer: { direction: 'asc', nulls: 'nullsLast' } }] }, /customer/);
    const four = { values: { order: { _some: { values: { customer: { _some: { values: { orders: { _some: { values: { lines: { _some: {} } } } } } } } } } } } };
    await bad(s.lines, { filter: four }, /more than 3 links/);
  });
});
