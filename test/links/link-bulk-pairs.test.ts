import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type TestApp, eachDatabase, startApp } from '../support/harness.ts';
import { shop, snapshot, valuesById } from './support.ts';

/**
 * The other side of a pair kept in step by bulk writes (store/links/link-writes.ts, set-based:
 * RowStore.followLinks): each row of the other side whose value changes is written once per
 * request, to the value a row-by-row write would give (ids appended in the order of the request,
 * removed where gone), with one update entry naming the field and its updatedAt moved; an unlink
 * on delete likewise. Concurrent writers linking the same row lose none of each other's links.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Change = Record<string, any>;

eachDatabase('links: bulk writes to a pair', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(kind);
  });
  after(() => t.close());

  const feed = async (table: string): Promise<Change[]> => {
    const r = await t.get(`/api/tables/${table}/changes`, { query: { limit: '1000' } });
    assert.equal(r.status, 200, r.text);
    return r.body.data;
  };
  const updatesOf = (changes: Change[], after: number) => changes.filter((c) => c.sequence > after && c.type === 'update');
  const lastSequence = (changes: Change[]) => Math.max(0, ...changes.map((c) => Number(c.sequence)));

  it('writes each customer a bulk touches once, with the ids in request order and one entry each', async () => {
    const s = await shop(t);
    await t.post(`/api/tables/${s.customers}/rows-bulk`, { data: ['c1', 'c2', 'c3', 'c4'].map((id) => ({ id, values: {} })) });
    assert.equal((await t.post(`/api/tables/${s.orders}/rows`, { id: 'o0', values: { customer: 'c1' } })).status, 201);
    const before = await t.get(`/api/tables/${s.customers}/rows/c1`);
    const mark = lastSequence(await feed(s.customers));
    const data = [
      { id: 'o1', values: { no: 1, customer: 'c1' } },
      { id: 'o2', values: { no: 2, customer: 'c2' } },
      { id: 'o3', values: { no: 3, customer: 'c1' } },
      { id: 'o4', values: { no: 4 } },
      { id: 'o5', values: { no: 5, customer: 'c2' } },
      { id: 'o6', values: { no: 6, customer: 'c1' } },
    ];
    const r = await t.post(`/api/tables/${s.orders}/rows-bulk`, { data });
    assert.equal(r.status, 201, r.text);
    const customers = valuesById((await snapshot(t, s.customers))[s.customers]);
    assert.deepEqual(customers.c1.orders, ['o0', 'o1', 'o3', 'o6']);
    assert.deepEqual(customers.c2.orders, ['o2', 'o5']);
    assert.deepEqual(customers.c3.orders, []);
    const updates = updatesOf(await feed(s.customers), mark);
    assert.deepEqual(
      updates.map((c) => [c.rowId, c.changedFields, c.row.values.orders]),
      [
        ['c1', ['orders'], ['o0', 'o1', 'o3', 'o6']],
        ['c2', ['orders'], ['o2', 'o5']],
      ],
    );
    const after = await t.get(`/api/tables/${s.customers}/rows/c1`);
    assert.ok(after.body.updatedAt > before.body.updatedAt, `${after.body.updatedAt} after ${before.body.updatedAt}`);
    assert.equal(after.body.createdAt, before.body.createdAt);
    assert.equal(updates[0].row.updatedAt, after.body.updatedAt);
  });

  it('moves orders between customers in a bulk update: each customer ends in step, its last entry holding its value', async () => {
    const s = await shop(t);
    await t.post(`/api/tables/${s.customers}/rows-bulk`, { data: ['c1', 'c2', 'c3'].map((id) => ({ id, values: {} })) });
    await t.post(`/api/tables/${s.orders}/rows-bulk`, {
      data: [
        { id: 'o1', values: { customer: 'c1' } },
        { id: 'o2', values: { customer: 'c1' } },
        { id: 'o3', values: { customer: 'c2' } },
      ],
    });
    const mark = lastSequence(await feed(s.customers));
    const r = await t.patch(`/api/tables/${s.orders}/rows-bulk`, {
      data: [
        { id: 'o1', values: { customer: 'c3' } },
        { id: 'o3', values: { customer: 'c1' } },
        { id: 'o2', values: { customer: null } },
      ],
    });
    assert.equal(r.status, 200, r.text);
    const customers = valuesById((await snapshot(t, s.customers))[s.customers]);
    assert.deepEqual(customers.c1.orders, ['o3']);
    assert.deepEqual(customers.c2.orders, []);
    assert.deepEqual(customers.c3.orders, ['o1']);
    // A bulk update follows each item in turn: a customer may be written more than once, its last entry is its value.
    const last = new Map<string, unknown>();
    for (const c of updatesOf(await feed(s.customers), mark)) last.set(c.rowId, c.row.values.orders);
    assert.deepEqual(Object.fromEntries(last), { c1: ['o3'], c2: [], c3: ['o1'] });
    // From the multiple side: one customer takes orders of two others; each order written once.
    const orderMark = lastSequence(await feed(s.orders));
    const p = await t.patch(`/api/tables/${s.customers}/rows-bulk`, { data: [{ id: 'c2', values: { orders: ['o1', 'o3'] } }] });
    assert.equal(p.status, 409, p.text); // o1 and o3 are another customer's: a single side refuses a second link
    assert.deepEqual(updatesOf(await feed(s.orders), orderMark), []);
    const ok = await t.patch(`/api/tables/${s.customers}/rows-bulk`, { data: [{ id: 'c2', values: { orders: ['o2'] } }] });
    assert.equal(ok.status, 200, ok.text);
    const orders = valuesById((await snapshot(t, s.orders))[s.orders]);
    assert.equal(orders.o2.customer, 'c2');
    assert.deepEqual(
      updatesOf(await feed(s.orders), orderMark).map((c) => [c.rowId, c.changedFields, c.row.values.customer]),
      [['o2', ['customer'], 'c2']],
    );
  });

  it('unlinks the orders of deleted customers: each order written once, with its entry', async () => {
    const s = await shop(t);
    await t.post(`/api/tables/${s.customers}/rows-bulk`, { data: ['c1', 'c2', 'c3'].map((id) => ({ id, values: {} })) });
    await t.post(`/api/tables/${s.orders}/rows-bulk`, { data: Array.from({ length: 9 }, (_, i) => ({ id: `o${i}`, values: { no: i, customer: `c${1 + (i % 3)}` } })) });
    const mark = lastSequence(await feed(s.orders));
    const r = await t.delete(`/api/tables/${s.customers}/rows-bulk`, { ids: ['c1', 'c3'] });
    assert.equal(r.status, 200, r.text);
    const orders = valuesById((await snapshot(t, s.orders))[s.orders]);
    for (let i = 0; i < 9; i++) assert.equal(orders[`o${i}`].customer, i % 3 === 1 ? 'c2' : null, `o${i}`);
    const updates = updatesOf(await feed(s.orders), mark);
    assert.deepEqual(updates.map((c) => c.rowId).sort(), ['o0', 'o2', 'o3', 'o5', 'o6', 'o8']);
    assert.ok(updates.every((c) => c.row.values.customer === null && c.changedFields[0] === 'customer'));
    const c2 = await t.get(`/api/tables/${s.customers}/rows/c2`);
    assert.deepEqual(c2.body.values.orders, ['o1', 'o4', 'o7']);
  });

  it('many to many: removing an id keeps the order of the others, adding appends, from either side, with one entry per row changed', async () => {
    const n = Math.floor(Math.random() * 1e9);
    const tags = `tags_${n}`;
    const items = `items_${n}`;
    assert.equal((await t.post('/api/tables', { code: tags, name: 'Tags', fields: [{ code: 'label', type: 'text' }] })).status, 201);
    const made = await t.post('/api/tables', { code: items, name: 'Items', fields: [{ code: 'tags', type: 'link', options: { table: tags, multiple: true, inverse: { code: 'items' } } }] });
    assert.equal(made.status, 201, made.text);
    await t.post(`/api/tables/${tags}/rows-bulk`, { data: ['t1', 't2'].map((id) => ({ id, values: { label: id } })) });
    const created = await t.post(`/api/tables/${items}/rows-bulk`, { data: ['i1', 'i2', 'i3', 'i4'].map((id) => ({ id, values: { tags: ['t1'] } })) });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual((await t.get(`/api/tables/${tags}/rows/t1`)).body.values.items, ['i1', 'i2', 'i3', 'i4']);
    const mark = lastSequence(await feed(tags));
    const r = await t.patch(`/api/tables/${items}/rows-bulk`, { data: [{ id: 'i2', values: { tags: [] } }, { id: 'i4', values: { tags: ['t2', 't1'] } }] });
    assert.equal(r.status, 200, r.text);
    const byTag = valuesById((await snapshot(t, tags))[tags]);
    assert.deepEqual(byTag.t1.items, ['i1', 'i3', 'i4']);
    assert.deepEqual(byTag.t2.items, ['i4']);
    const last = new Map<string, unknown>();
    for (const c of updatesOf(await feed(tags), mark)) {
      assert.deepEqual(c.changedFields, ['items']);
      last.set(c.rowId, c.row.values.items);
    }
    assert.deepEqual(Object.fromEntries(last), { t1: ['i1', 'i3', 'i4'], t2: ['i4'] });
    // From the other side: t2 takes i1 and drops i4; i1 appends t2 after t1, i4 keeps t1 alone.
    const itemMark = lastSequence(await feed(items));
    const p = await t.patch(`/api/tables/${tags}/rows-bulk`, { data: [{ id: 't2', values: { items: ['i1'] } }] });
    assert.equal(p.status, 200, p.text);
    const byItem = valuesById((await snapshot(t, items))[items]);
    assert.deepEqual(byItem.i1.tags, ['t1', 't2']);
    assert.deepEqual(byItem.i2.tags, []);
    assert.deepEqual(byItem.i4.tags, ['t1']);
    assert.deepEqual(
      updatesOf(await feed(items), itemMark).map((c) => [c.rowId, c.row.values.tags]),
      [
        ['i1', ['t1', 't2']],
        ['i4', ['t1']],
      ],
    );
    // Deleting t1 unlinks it everywhere: i1 keeps t2, i3 and i4 hold none.
    assert.equal((await t.delete(`/api/tables/${tags}/rows/t1`)).status, 204);
    const afterDelete = valuesById((await snapshot(t, items))[items]);
    assert.deepEqual([afterDelete.i1.tags, afterDelete.i3.tags, afterDelete.i4.tags], [['t2'], [], []]);
  });

  it('keeps every link when concurrent writers link orders to the same customer', async () => {
    const s = await shop(t);
    await t.post(`/api/tables/${s.customers}/rows-bulk`, { data: [{ id: 'c1', values: {} }, { id: 'c2', values: {} }] });
    const work: Promise<{ status: number; text: string }>[] = [];
    for (let i = 0; i < 40; i++) {
      work.push(t.post(`/api/tables/${s.orders}/rows`, { id: `o${i}`, values: { customer: i % 4 === 0 ? 'c2' : 'c1' } }));
      if (i % 10 === 5) work.push(t.post(`/api/tables/${s.orders}/rows-bulk`, { data: [{ id: `b${i}a`, values: { customer: 'c1' } }, { id: `b${i}b`, values: { customer: 'c2' } }] }));
    }
    for (const r of await Promise.all(work)) assert.ok(r.status === 201, `${r.status} ${r.text}`);
    const orders = valuesById((await snapshot(t, s.orders))[s.orders]);
    for (const c of ['c1', 'c2']) {
      const linking = Object.keys(orders).filter((o) => orders[o].customer === c).sort();
      const customer = await t.get(`/api/tables/${s.customers}/rows/${c}`);
      assert.deepEqual([...customer.body.values.orders].sort(), linking, c);
    }
  });
});
