import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type Doc, documentChecks, pointer } from '../openapi/conformance.ts';
import { type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';
import { shop } from '../links/support.ts';

/**
 * Group keys over links (CONTRACT §13, §11), on both databases: a single link groups by the linked
 * row's id (rows without a link in the null group), may be counted distinctly, sorted and paged
 * over; a multiple link as a group key or a countDistinct, and min/max of a link, answer 400 naming
 * it. The table's OpenAPI document describes link group keys and real answers conform to it.
 */

const ORIGIN = 'http://rowhouse.test';

eachDatabase('aggregates: group keys over links', (kind) => {
  let t: TestApp;
  let orders: string;
  let customers: string;
  let ordersId: string;
  let customersId: string;
  let acme: string;
  let bolt: string;
  let cato: string;
  before(async () => {
    t = await startApp(kind);
    const s = await shop(t);
    ({ orders, customers } = s);
    ordersId = s.ids.orders;
    customersId = s.ids.customers;
    const c = await t.post(`/api/tables/${customers}/rows-bulk`, {
      data: [{ values: { name: 'acme', country: 'JP' } }, { values: { name: 'bolt', country: 'DE' } }, { values: { name: 'cato', country: 'JP' } }],
    });
    assert.equal(c.status, 201, c.text);
    [acme, bolt, cato] = c.body.data.map((r: { id: string }) => r.id);
    const o = await t.post(`/api/tables/${orders}/rows-bulk`, {
      data: [
        { values: { no: 1, customer: acme } },
        { values: { no: 2, customer: acme } },
        { values: { no: 3, customer: bolt } },
        { values: { no: 4, customer: null } },
        { values: { no: 5, customer: acme } },
        { values: { no: 6, customer: bolt } },
      ],
    });
    assert.equal(o.status, 201, o.text);
  });
  after(() => t.close());

  const agg = (table: string, query: Record<string, unknown>) => t.get(`/api/tables/${table}/rows-aggregate`, { query });
  const byId = (ids: string[]) => [...ids].sort((a, b) => (Buffer.from(a) < Buffer.from(b) ? -1 : 1));

  it('a single link groups by the linked row\'s id; rows without a link form the null group', async () => {
    const r = await agg(orders, { groupBy: [{ field: 'customer' }], metrics: [{ fn: 'count' }, { fn: 'sum', field: 'no' }] });
    assert.equal(r.status, 200, r.text);
    const counts: Record<string, [number, number]> = { [acme]: [3, 8], [bolt]: [2, 9] };
    assert.deepEqual(r.body, {
      data: [
        { group: { customer: null }, metrics: { count: 1, sum_no: 4 } },
        ...byId([acme, bolt]).map((id) => ({ group: { customer: id }, metrics: { count: counts[id][0], sum_no: counts[id][1] } })),
      ],
      nextUrl: null,
    });
  });

  it('customers with more than two orders via having; a link group key with a link filter, sorted descending, paged', async () => {
    const many = await agg(orders, { groupBy: [{ field: 'customer' }], having: { count: { _gt: 2 } } });
    assert.deepEqual(many.body.data, [{ group: { customer: acme }, metrics: { count: 3 } }]);
    const jp = await agg(orders, { groupBy: [{ field: 'customer' }], filter: { values: { customer: { _some: { values: { country: { _eq: 'JP' } } } } } } });
    assert.deepEqual(jp.body.data, [{ group: { customer: acme }, metrics: { count: 3 } }]);
    // Every group, one per page, in descending id order with the null group last.
    const expected = [...byId([acme, bolt]).reverse(), null];
    const seen: unknown[] = [];
    let r = await agg(orders, { groupBy: [{ field: 'customer' }], sort: [{ customer: { direction: 'desc', nulls: 'nullsLast' } }], pageSize: '1' });
    for (;;) {
      assert.equal(r.status, 200, r.text);
      seen.push(...r.body.data.map((g: { group: { customer: unknown } }) => g.group.customer));
      if (r.body.nextUrl === null) break;
      assert.equal(r.headers.link, `<${r.body.nextUrl}>; rel="next"`);
      r = await t.get(r.body.nextUrl.slice(ORIGIN.length));
    }
    assert.deepEqual(seen, expected);
  });

  it('countDistinct of a single link counts linked rows; a link moved or unlinked moves its group', async () => {
    const r = await agg(orders, { metrics: [{ fn: 'countDistinct', field: 'customer' }, { fn: 'count' }] });
    assert.deepEqual(r.body.data, [{ group: {}, metrics: { countDistinct_customer: 2, count: 6 } }]);
    // Order 4 now links to cato, and deleting bolt unlinks its orders (onDelete unlink).
    const four = await t.get(`/api/tables/${orders}/rows`, { query: { filter: { values: { no: { _eq: 4 } } } } });
    const moved = await t.patch(`/api/tables/${orders}/rows/${four.body.data[0].id}`, { values: { customer: cato } });
    assert.equal(moved.status, 200, moved.text);
    const gone = await t.delete(`/api/tables/${customers}/rows/${bolt}`);
    assert.equal(gone.status, 204, gone.text);
    const after_ = await agg(orders, { groupBy: [{ field: 'customer' }] });
    const counts: Record<string, number> = { [acme]: 3, [cato]: 1 };
    assert.deepEqual(after_.body.data, [{ group: { customer: null }, metrics: { count: 2 } }, ...byId([acme, cato]).map((id) => ({ group: { customer: id }, metrics: { count: counts[id] } }))]);
  });

  it('400: a multiple link as a group key or counted distinctly, min/max of a link; nothing else is reported wrongly', async () => {
    const multiple = expectError(await agg(customers, { groupBy: [{ field: 'orders' }] }), 400);
    assert.match(JSON.stringify(multiple.details), /groupBy\[0\]\.field.*orders is a multiple link field, which cannot be a group key/);
    const distinct = expectError(await agg(customers, { metrics: [{ fn: 'countDistinct', field: 'orders' }] }), 400);
    assert.match(JSON.stringify(distinct.details), /metrics\[0\]\.field.*countDistinct cannot take orders, a multiple link field/);
    for (const fn of ['min', 'max']) {
      const extreme = expectError(await agg(orders, { metrics: [{ fn, field: 'customer' }] }), 400);
      assert.match(JSON.stringify(extreme.details), new RegExp(`metrics\\[0\\]\\.field.*${fn} cannot take customer, a link field`));
    }
    const sum = expectError(await agg(orders, { metrics: [{ fn: 'sum', field: 'customer' }] }), 400);
    assert.match(JSON.stringify(sum.details), /sum takes a number field/);
  });

  it('the table\'s OpenAPI document takes a link group key and describes its answer', async () => {
    const doc = (await t.get(`/api/tables/${ordersId}/openapi`)).body as Doc;
    const path = `/api/tables/${ordersId}/rows-aggregate`;
    const op = doc.paths[path]?.get as unknown as { parameters: { name: string }[] };
    const { ajv, conforms } = documentChecks(doc);
    const index = op.parameters.findIndex((p) => p.name === 'groupBy');
    const validate = ajv.compile({ $ref: `doc#/${pointer('paths', path, 'get', 'parameters', String(index), 'schema', 'contentSchema')}` });
    assert.ok(validate([{ field: 'customer' }]), ajv.errorsText(validate.errors));
    assert.match(JSON.stringify(doc), /Single links \(customer\) group by the linked row's id; multiple links cannot be group keys/);
    conforms(path, 'get', await t.get(path, { query: { groupBy: [{ field: 'customer' }], metrics: [{ fn: 'countDistinct', field: 'customer' }, { fn: 'count' }] } }));
    // The customers' document does not offer the multiple link `orders` as a group key.
    const customersDoc = (await t.get(`/api/tables/${customersId}/openapi`)).body as Doc;
    const customersPath = `/api/tables/${customersId}/rows-aggregate`;
    const checks = documentChecks(customersDoc);
    const cop = customersDoc.paths[customersPath]?.get as unknown as { parameters: { name: string }[] };
    const cindex = cop.parameters.findIndex((p) => p.name === 'groupBy');
    const cvalidate = checks.ajv.compile({ $ref: `doc#/${pointer('paths', customersPath, 'get', 'parameters', String(cindex), 'schema', 'contentSchema')}` });
    assert.equal(cvalidate([{ field: 'orders' }]), false);
    checks.conforms(customersPath, 'get', await t.get(customersPath, { query: { groupBy: [{ field: 'orders' }] } })); // 400
  });
});
