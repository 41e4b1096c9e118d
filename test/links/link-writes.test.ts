import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';
import { shop, snapshot, valuesById } from './support.ts';

/** Link fields (CONTRACT §11): values written from either side of a pair, integrity on every write path, onDelete. */

eachDatabase('links: writes', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(kind);
  });
  after(() => t.close());

  it('makes the pair: the inverse field appears on the target table, with options naming each other', async () => {
    const s = await shop(t);
    const c = await t.get(`/api/tables/${s.customers}`);
    const o = await t.get(`/api/tables/${s.orders}`);
    const orders = c.body.fields.find((f: { code: string }) => f.code === 'orders');
    const customer = o.body.fields.find((f: { code: string }) => f.code === 'customer');
    assert.deepEqual(orders.options, { table: s.ids.orders, multiple: true, onDelete: 'unlink', inverseField: customer.id });
    assert.deepEqual(customer.options, { table: s.ids.customers, multiple: false, onDelete: 'unlink', inverseField: orders.id });
    assert.equal(orders.type, 'link');
  });

  it('reads a link written from either side the same from both, with change entries on both sides', async () => {
    const s = await shop(t);
    await t.post(`/api/tables/${s.customers}/rows-bulk`, { data: [{ id: 'c1', values: { name: 'A' } }, { id: 'c2', values: { name: 'B' } }] });
    const created = await t.post(`/api/tables/${s.orders}/rows`, { id: 'o1', values: { no: 1, customer: 'c1' } });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.values.customer, 'c1');
    assert.deepEqual(created.body.values.lines, []);
    let c1 = await t.get(`/api/tables/${s.customers}/rows/c1`);
    assert.deepEqual(c1.body.values.orders, ['o1']);
    // From the other side: c2 takes o2 and o3 (new orders), in that order.
    await t.post(`/api/tables/${s.orders}/rows-bulk`, { data: [{ id: 'o2', values: { no: 2 } }, { id: 'o3', values: { no: 3 } }] });
    const p = await t.patch(`/api/tables/${s.customers}/rows/c2`, { values: { orders: ['o3', 'o2'] } });
    assert.equal(p.status, 200, p.text);
    assert.deepEqual(p.body.values.orders, ['o3', 'o2']);
    const orders = valuesById((await snapshot(t, s.orders))[s.orders]);
    assert.equal(orders.o2.customer, 'c2');
    assert.equal(orders.o3.customer, 'c2');
    // Moving o1 from c1 to c2 from the order's side updates both customers.
    await t.patch(`/api/tables/${s.orders}/rows/o1`, { values: { customer: 'c2' } });
    c1 = await t.get(`/api/tables/${s.customers}/rows/c1`);
    assert.deepEqual(c1.body.values.orders, []);
    const c2 = await t.get(`/api/tables/${s.customers}/rows/c2`);
    assert.deepEqual(c2.body.values.orders, ['o3', 'o2', 'o1']);
    // The change feed of customers holds an update of c1 naming the inverse field.
    const feed = await t.get(`/api/tables/${s.customers}/changes`);
    assert.equal(feed.status, 200, feed.text);
    const updates = feed.body.data.filter((e: { type: string; rowId: string }) => e.type === 'update' && e.rowId === 'c1');
    assert.ok(updates.length >= 2, JSON.stringify(feed.body.data));
    assert.deepEqual(updates[updates.length - 1].changedFields, ['orders']);
    // Clearing from the multiple side clears the single side.
    await t.patch(`/api/tables/${s.customers}/rows/c2`, { values: { orders: null } });
    const after = valuesById((await snapshot(t, s.orders))[s.orders]);
    assert.deepEqual([after.o1.customer, after.o2.customer, after.o3.customer], [null, null, null]);
  });

  it('refuses from the multiple side a row whose single side links elsewhere (409), changing nothing', async () => {
    const s = await shop(t);
    await t.post(`/api/tables/${s.customers}/rows-bulk`, { data: [{ id: 'c1', values: {} }, { id: 'c2', values: {} }] });
    await t.post(`/api/tables/${s.orders}/rows`, { id: 'o1', values: { customer: 'c1' } });
    const before = await snapshot(t, s.customers, s.orders);
    const r = await t.patch(`/api/tables/${s.customers}/rows/c2`, { values: { orders: ['o1'] } });
    const body = expectError(r, 409);
    assert.match(body.message as string, /o1/);
    assert.match(body.message as string, /customer/);
    assert.deepEqual(await snapshot(t, s.customers, s.orders), before);
  });

  it('refuses a second link on a one-to-one pair (409)', async () => {
    const a = await t.post('/api/tables', { code: `people_${kind}`, name: 'People', fields: [{ code: 'name', type: 'text' }] });
    assert.equal(a.status, 201);
    const b = await t.post('/api/tables', {
      code: `desks_${kind}`,
      name: 'Desks',
      fields: [{ code: 'owner', type: 'link', options: { table: `people_${kind}`, inverse: { code: 'desk', multiple: false } } }],
    });
    assert.equal(b.status, 201, b.text);
    await t.post(`/api/tables/people_${kind}/rows`, { id: 'p1', values: {} });
    assert.equal((await t.post(`/api/tables/desks_${kind}/rows`, { id: 'd1', values: { owner: 'p1' } })).status, 201);
    const before = await snapshot(t, `people_${kind}`, `desks_${kind}`);
    expectError(await t.post(`/api/tables/desks_${kind}/rows`, { id: 'd2', values: { owner: 'p1' } }), 409);
    assert.deepEqual(await snapshot(t, `people_${kind}`, `desks_${kind}`), before);
    assert.deepEqual((await t.get(`/api/tables/people_${kind}/rows/p1`)).body.values.desk, 'd1');
  });

  it('refuses unknown ids (400 naming field and id) in single, bulk, batch writes, writing nothing', async () => {
    const s = await shop(t);
    await t.post(`/api/tables/${s.customers}/rows`, { id: 'c1', values: {} });
    const before = await snapshot(t, s.customers, s.orders, s.lines);
    let body = expectError(await t.post(`/api/tables/${s.orders}/rows`, { values: { customer: 'nope' } }), 400);
    assert.match(JSON.stringify(body), /customer/);
    assert.match(JSON.stringify(body), /nope/);
    body = expectError(await t.post(`/api/tables/${s.orders}/rows-bulk`, { data: [{ values: { customer: 'c1' } }, { values: { customer: 'gone' } }] }), 400);
    assert.match(body.message as string, /^data\[1\]/);
    assert.match(JSON.stringify(body), /gone/);
    body = expectError(await t.post(`/api/tables/${s.customers}/rows`, { values: { orders: ['x1'] } }), 400);
    assert.match(JSON.stringify(body), /x1/);
    // An id of another table: o-ids are not customers.
    await t.post(`/api/tables/${s.orders}/rows`, { id: 'o9', values: {} });
    const mid = await snapshot(t, s.customers, s.orders, s.lines);
    expectError(await t.patch(`/api/tables/${s.orders}/rows/o9`, { values: { customer: 'o9' } }), 400);
    // Wrong shapes: a non-array for a multiple link, a repeated id, a number for a single link.
    body = expectError(await t.patch(`/api/tables/${s.customers}/rows/c1`, { values: { orders: 'o9' } }), 400);
    assert.match(JSON.stringify(body), /orders/);
    body = expectError(await t.patch(`/api/tables/${s.customers}/rows/c1`, { values: { orders: ['o9', 'o9'] } }), 400);
    assert.match(JSON.stringify(body), /repeats/);
    expectError(await t.patch(`/api/tables/${s.orders}/rows/o9`, { values: { customer: 12 } }), 400);
    expectError(await t.patch(`/api/tables/${s.orders}/rows/o9`, { values: { customer: ['c1'] } }), 400);
    assert.deepEqual(await snapshot(t, s.customers, s.orders, s.lines), mid);
    assert.equal(before[s.orders].length + 1, mid[s.orders].length);
  });

  it('a batch creates a customer, an order linking it and two lines linking the order; a failing last operation leaves nothing', async () => {
    const s = await shop(t);
    const ops = [
      { type: 'create', tableId: s.customers, id: 'nc', values: { name: 'New' } },
      { type: 'create', tableId: s.orders, id: 'no', values: { customer: 'nc' } },
      { type: 'create', tableId: s.lines, id: 'l1', values: { order: 'no', sku: 'a' } },
      { type: 'create', tableId: s.lines, id: 'l2', values: { order: 'no', sku: 'b' } },
    ];
    const before = await snapshot(t, s.customers, s.orders, s.lines);
    const failing = await t.post('/api/rows-batch', { operations: [...ops, { type: 'update', tableId: s.orders, id: 'missing', values: {} }] });
    expectError(failing, 404);
    assert.deepEqual(await snapshot(t, s.customers, s.orders, s.lines), before);
    const badLink = await t.post('/api/rows-batch', { operations: [...ops, { type: 'create', tableId: s.lines, values: { order: 'nope' } }] });
    const body = expectError(badLink, 400);
    assert.match(body.message as string, /^operations\[4\]/);
    assert.deepEqual(await snapshot(t, s.customers, s.orders, s.lines), before);
    const ok = await t.post('/api/rows-batch', { operations: ops });
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual((await t.get(`/api/tables/${s.orders}/rows/no`)).body.values.lines, ['l1', 'l2']);
    assert.deepEqual((await t.get(`/api/tables/${s.customers}/rows/nc`)).body.values.orders, ['no']);
  });

  it('onDelete unlink, restrict and cascade through single, bulk and batch deletes', async () => {
    // unlink (customer of orders), cascade (order of lines).
    const s = await shop(t);
    await t.post(`/api/tables/${s.customers}/rows`, { id: 'c1', values: {} });
    await t.post(`/api/tables/${s.orders}/rows-bulk`, { data: [{ id: 'o1', values: { customer: 'c1' } }, { id: 'o2', values: { customer: 'c1' } }] });
    await t.post(`/api/tables/${s.lines}/rows-bulk`, { data: [{ id: 'l1', values: { order: 'o1' } }, { id: 'l2', values: { order: 'o1' } }, { id: 'l3', values: { order: 'o2' } }] });
    assert.equal((await t.delete(`/api/tables/${s.customers}/rows/c1`)).status, 204);
    let orders = valuesById((await snapshot(t, s.orders))[s.orders]);
    assert.equal(orders.o1.customer, null);
    assert.equal(orders.o2.customer, null);
    // Cascade through a bulk delete: o1 takes l1 and l2.
    assert.equal((await t.delete(`/api/tables/${s.orders}/rows-bulk`, { ids: ['o1'] })).status, 200);
    assert.deepEqual((await snapshot(t, s.lines))[s.lines].map((r) => r.id), ['l3']);
    // Cascade through a batch delete.
    const b = await t.post('/api/rows-batch', { operations: [{ type: 'delete', tableId: s.orders, id: 'o2' }] });
    assert.equal(b.status, 200, b.text);
    assert.deepEqual((await snapshot(t, s.lines))[s.lines], []);
    orders = valuesById((await snapshot(t, s.orders))[s.orders]);
    assert.deepEqual(orders, {});

    // restrict
    const r = await shop(t, { customerOnDelete: 'restrict' });
    await t.post(`/api/tables/${r.customers}/rows-bulk`, { data: [{ id: 'c1', values: {} }, { id: 'c2', values: {} }] });
    await t.post(`/api/tables/${r.orders}/rows`, { id: 'o1', values: { customer: 'c1' } });
    const before = await snapshot(t, r.customers, r.orders);
    let body = expectError(await t.delete(`/api/tables/${r.customers}/rows/c1`), 409);
    assert.match(body.message as string, /o1/);
    assert.match(body.message as string, new RegExp(r.orders));
    assert.match(body.message as string, /customer/);
    expectError(await t.delete(`/api/tables/${r.customers}/rows-bulk`, { ids: ['c2', 'c1'] }), 409);
    body = expectError(await t.post('/api/rows-batch', { operations: [{ type: 'delete', tableId: r.customers, id: 'c1' }] }), 409);
    assert.match(body.message as string, /^operations\[0\]/);
    assert.deepEqual(await snapshot(t, r.customers, r.orders), before);
    // Deleting the linking order first, in the same batch, lets the customer go.
    const ok = await t.post('/api/rows-batch', { operations: [{ type: 'delete', tableId: r.orders, id: 'o1' }, { type: 'delete', tableId: r.customers, id: 'c1' }] });
    assert.equal(ok.status, 200, ok.text);
  });

  it('cascade cycles terminate, and self-links work', async () => {
    const a = await t.post('/api/tables', { code: `nodes_${kind}`, name: 'Nodes', fields: [{ code: 'label', type: 'text' }] });
    assert.equal(a.status, 201);
    const put = await t.put(`/api/tables/nodes_${kind}`, {
      fields: [...a.body.fields, { code: 'next', type: 'link', options: { table: `nodes_${kind}`, multiple: true, onDelete: 'cascade', inverse: { code: 'prev', multiple: true } } }],
    });
    assert.equal(put.status, 200, put.text);
    const prev = put.body.fields.find((f: { code: string }) => f.code === 'prev');
    assert.ok(prev, JSON.stringify(put.body.fields));
    // prev cascades too: the ring n1 → n2 → n3 → n1 goes whole when any goes.
    const fields = put.body.fields.map((f: { code: string; options: Record<string, unknown> }) => (f.code === 'prev' ? { ...f, options: { ...f.options, onDelete: 'cascade' } } : f));
    assert.equal((await t.put(`/api/tables/nodes_${kind}`, { fields })).status, 200);
    await t.post(`/api/tables/nodes_${kind}/rows-bulk`, { data: [{ id: 'n1', values: { next: ['n2'] } }, { id: 'n2', values: { next: ['n3'] } }, { id: 'n3', values: { next: ['n1', 'n3'] } }, { id: 'lone', values: {} }] });
    const n3 = await t.get(`/api/tables/nodes_${kind}/rows/n3`);
    assert.deepEqual(n3.body.values.prev, ['n2', 'n3']);
    assert.equal((await t.delete(`/api/tables/nodes_${kind}/rows/n1`)).status, 204);
    assert.deepEqual((await snapshot(t, `nodes_${kind}`))[`nodes_${kind}`].map((r) => r.id), ['lone']);
  });

  it('follows links written by upserts and bulk updates, and refuses an unknown id there too', async () => {
    const s = await shop(t);
    await t.post(`/api/tables/${s.customers}/rows-bulk`, { data: [{ id: 'c1', values: {} }, { id: 'c2', values: {} }] });
    // An upsert that creates, then one that updates.
    let r = await t.post(`/api/tables/${s.orders}/rows`, { id: 'o1', values: { customer: 'c1' }, options: { upsert: true } });
    assert.equal(r.status, 201, r.text);
    r = await t.post(`/api/tables/${s.orders}/rows`, { id: 'o1', values: { customer: 'c2' }, options: { upsert: true } });
    assert.equal(r.status, 200, r.text);
    const bulk = await t.post(`/api/tables/${s.orders}/rows-bulk`, { data: [{ id: 'o1', values: { customer: 'c1' } }, { id: 'o2', values: { customer: 'c1' } }], options: { upsert: true } });
    assert.equal(bulk.status, 200, bulk.text);
    assert.deepEqual((await t.get(`/api/tables/${s.customers}/rows/c1`)).body.values.orders, ['o1', 'o2']);
    assert.deepEqual((await t.get(`/api/tables/${s.customers}/rows/c2`)).body.values.orders, []);
    const patched = await t.patch(`/api/tables/${s.orders}/rows-bulk`, { data: [{ id: 'o1', values: { customer: 'c2' } }, { id: 'o2', values: { customer: null } }] });
    assert.equal(patched.status, 200, patched.text);
    assert.deepEqual((await t.get(`/api/tables/${s.customers}/rows/c1`)).body.values.orders, []);
    assert.deepEqual((await t.get(`/api/tables/${s.customers}/rows/c2`)).body.values.orders, ['o1']);
    const before = await snapshot(t, s.customers, s.orders);
    let body = expectError(await t.patch(`/api/tables/${s.orders}/rows-bulk`, { data: [{ id: 'o2', values: { customer: 'c1' } }, { id: 'o1', values: { customer: 'ghost' } }] }), 400);
    assert.match(body.message as string, /^data\[1\]/);
    assert.match(body.message as string, /ghost/);
    body = expectError(await t.post(`/api/tables/${s.orders}/rows`, { id: 'o1', values: { customer: 'ghost' }, options: { upsert: true } }), 400);
    assert.match(body.message as string, /ghost/);
    assert.deepEqual(await snapshot(t, s.customers, s.orders), before);
  });
});
