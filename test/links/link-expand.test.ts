import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';
import { readPlanTables, writeTables } from '../../src/plan/tables-touched.ts';
import { planRowRead } from '../../src/plan/row-plans.ts';
import { parseRowList } from '../../src/domain/requests/row-list-query.ts';
import { withLinkedTables } from '../../src/store/links/linked-tables.ts';
import { TableCatalog } from '../../src/store/table-catalog.ts';
import { shop, snapshot } from './support.ts';

/** `expand` (CONTRACT §11) on get, list, write answers and batch answers; bad expand refused before anything is written. */

eachDatabase('links: expand', (kind) => {
  let t: TestApp;
  let s: Awaited<ReturnType<typeof shop>>;
  before(async () => {
    t = await startApp(kind);
    s = await shop(t);
    await t.post(`/api/tables/${s.customers}/rows`, { id: 'c1', values: { name: 'Aki', country: 'JP' } });
    await t.post(`/api/tables/${s.orders}/rows-bulk`, { data: [{ id: 'o1', values: { no: 1, customer: 'c1' } }, { id: 'o2', values: { no: 2 } }] });
    await t.post(`/api/tables/${s.lines}/rows-bulk`, { data: [{ id: 'l1', values: { order: 'o1', sku: 'a' } }, { id: 'l2', values: { order: 'o1', sku: 'b' } }] });
  });
  after(() => t.close());

  it('get and list replace the expanded ids by records whose own links stay ids; nextUrl repeats expand', async () => {
    const o1 = await t.get(`/api/tables/${s.orders}/rows/o1`, { query: { expand: 'customer,lines' } });
    assert.equal(o1.status, 200, o1.text);
    assert.equal(o1.body.values.customer.id, 'c1');
    assert.deepEqual(o1.body.values.customer.values, { name: 'Aki', country: 'JP', orders: ['o1'] });
    assert.deepEqual(Object.keys(o1.body.values.customer), ['id', 'createdAt', 'updatedAt', 'createdBy', 'updatedBy', 'values']);
    assert.deepEqual(o1.body.values.lines.map((l: { id: string; values: { order: string } }) => [l.id, l.values.order]), [['l1', 'o1'], ['l2', 'o1']]);
    const list = await t.get(`/api/tables/${s.orders}/rows`, { query: { expand: 'customer', pageSize: '1', sort: [{ no: { direction: 'asc', nulls: 'nullsLast' } }] } });
    assert.equal(list.status, 200, list.text);
    assert.equal(list.body.data[0].values.customer.id, 'c1');
    assert.match(list.body.nextUrl, /expand=customer/);
    const next = await t.get((list.body.nextUrl as string).replace(/^https?:\/\/[^/]+/, ''));
    assert.equal(next.body.data[0].id, 'o2');
    assert.equal(next.body.data[0].values.customer, null);
  });

  it('expands write answers: create, update, bulk and batch', async () => {
    const created = await t.post(`/api/tables/${s.lines}/rows`, { id: 'l3', values: { order: 'o2' } }, { query: { expand: 'order' } });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.values.order.id, 'o2');
    assert.deepEqual(created.body.values.order.values.lines, ['l3']);
    const patched = await t.patch(`/api/tables/${s.customers}/rows/c1`, { values: { name: 'Aki S' } }, { query: { expand: 'orders' } });
    assert.deepEqual(patched.body.values.orders.map((o: { id: string }) => o.id), ['o1']);
    const bulk = await t.post(`/api/tables/${s.orders}/rows-bulk`, { data: [{ id: 'o3', values: { customer: 'c1' } }] }, { query: { expand: 'customer' } });
    assert.equal(bulk.status, 201, bulk.text);
    assert.equal(bulk.body.data[0].values.customer.values.name, 'Aki S');
    const batch = await t.post(
      '/api/rows-batch',
      { operations: [{ type: 'create', tableId: s.customers, id: 'c9', values: {} }, { type: 'create', tableId: s.orders, id: 'o9', values: { customer: 'c9' } }] },
      { query: { expand: 'customer,orders' } },
    );
    assert.equal(batch.status, 200, batch.text);
    // Each operation's row as that operation left it (c9 had no orders yet); expanded rows as committed.
    assert.deepEqual(batch.body.data[0].row.values.orders, []);
    assert.equal(batch.body.data[1].row.values.customer.id, 'c9');
    assert.deepEqual(batch.body.data[1].row.values.customer.values.orders, ['o9']);
  });

  it('refuses more than 10 codes, unknown and non-link codes with a 400 naming them, writing nothing', async () => {
    const before = await snapshot(t, s.customers, s.orders, s.lines);
    let body = expectError(await t.get(`/api/tables/${s.orders}/rows`, { query: { expand: 'no' } }), 400);
    assert.match(JSON.stringify(body), /no is not a link field/);
    body = expectError(await t.get(`/api/tables/${s.orders}/rows/o1`, { query: { expand: 'nope' } }), 400);
    assert.match(JSON.stringify(body), /nope/);
    expectError(await t.get(`/api/tables/${s.orders}/rows`, { query: { expand: Array.from({ length: 11 }, () => 'customer').join(',') } }), 400);
    body = expectError(await t.post(`/api/tables/${s.orders}/rows`, { id: 'ox', values: { customer: 'c1' } }, { query: { expand: 'no' } }), 400);
    assert.match(JSON.stringify(body), /expand/);
    expectError(await t.post(`/api/tables/${s.orders}/rows-bulk`, { data: [{ id: 'oy', values: {} }] }, { query: { expand: 'sku' } }), 400);
    body = expectError(await t.post('/api/rows-batch', { operations: [{ type: 'create', tableId: s.orders, id: 'oz', values: {} }] }, { query: { expand: 'nothing' } }), 400);
    assert.match(JSON.stringify(body), /nothing/);
    expectError(await t.post(`/api/tables/${s.orders}/rows`, { id: 'ow', values: {} }, { query: { other: '1' } }), 400);
    assert.deepEqual(await snapshot(t, s.customers, s.orders, s.lines), before);
  });

  it('a read plan says which tables it touches: its own, its link filters and its expand', async () => {
    const catalog = new TableCatalog(t.database);
    const lines = await catalog.find(t.database.db, s.lines);
    assert.ok(lines);
    const filter = JSON.stringify({ values: { order: { _some: { values: { customer: { _has: 'c1' } } } } } });
    const q = parseRowList({ filter, expand: 'order' }, await withLinkedTables(catalog, t.database.db, lines), 'secret');
    const plan = planRowRead(lines, q.selection, q.after, q.pageSize, q.expand);
    // `_has` reads nothing of customers: it names an id the order holds.
    assert.deepEqual(readPlanTables(plan), [s.ids.lines, s.ids.orders]);
    const plain = parseRowList({}, lines, 'secret');
    assert.deepEqual(readPlanTables(planRowRead(lines, plain.selection, null, 50, plain.expand)), [s.ids.lines]);
    // Writes: a line's values move its order's `lines`; deleting an order acts on customers' and lines' links to it.
    const orders = await catalog.find(t.database.db, s.orders);
    assert.ok(orders);
    assert.deepEqual(writeTables(lines, 'write'), [s.ids.orders]);
    assert.deepEqual(writeTables(orders, 'delete').sort(), [s.ids.customers, s.ids.lines].sort());
  });
});
