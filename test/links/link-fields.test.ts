import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';
import { shop, snapshot, valuesById } from './support.ts';

/** Link fields in table definitions (CONTRACT §11): options checked, pairs made and removed together, tables deleted. */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Field = Record<string, any>;

eachDatabase('links: fields', (kind) => {
  let t: TestApp;
  let n = 0;
  before(async () => {
    t = await startApp(kind);
  });
  after(() => t.close());

  const fieldsOf = async (table: string): Promise<Field[]> => (await t.get(`/api/tables/${table}`)).body.fields;

  it('refuses bad options with a 400 naming each, creating nothing', async () => {
    const s = await shop(t);
    const code = `bad_${++n}`;
    const bad = async (options: unknown, pattern: RegExp, extra: Field = {}) => {
      const r = await t.post('/api/tables', { code, name: 'Bad', fields: [{ code: 'x', type: 'link', options, ...extra }] });
      const body = expectError(r, 400);
      assert.match(JSON.stringify(body), pattern);
      assert.equal((await t.get(`/api/tables/${code}`)).status, 404);
    };
    await bad({ table: 'no_such_table' }, /fields\[0\]\.options\.table/);
    await bad({ table: s.customers, multiple: 'yes' }, /multiple/);
    await bad({ table: s.customers, onDelete: 'explode' }, /onDelete/);
    await bad({}, /table/);
    await bad({ table: s.customers, inverse: { code: 'name' } }, /inverse\.code/);
    await bad({ table: s.customers, inverse: { code: '1bad' } }, /inverse/);
    await bad({ table: s.customers, inverseField: 'x' }, /inverseField/);
    await bad({ table: s.customers }, /required/, { required: true });
    assert.deepEqual((await fieldsOf(s.customers)).map((f) => f.code), ['name', 'country', 'orders']);
  });

  it('refuses changing a link field\'s type or table, and inverse on an existing field', async () => {
    const s = await shop(t);
    const fields = await fieldsOf(s.orders);
    const change = async (edit: (f: Field) => Field, pattern: RegExp) => {
      const next = fields.map((f) => (f.code === 'customer' ? edit(f) : f));
      const body = expectError(await t.put(`/api/tables/${s.orders}`, { fields: next }), 400);
      assert.match(JSON.stringify(body), pattern);
    };
    await change((f) => ({ ...f, type: 'text', options: {} }), /type/);
    await change((f) => ({ ...f, options: { ...f.options, table: s.lines } }), /options\.table/);
    await change((f) => ({ ...f, options: { ...f.options, inverse: { code: 'again' } } }), /inverse/);
    await change((f) => ({ ...f, options: { ...f.options, inverseField: fields[0].id } }), /inverseField/);
    assert.deepEqual(await fieldsOf(s.orders), fields);
  });

  it('changes multiple both ways: values become arrays, and back when no row holds more than one', async () => {
    const s = await shop(t);
    await t.post(`/api/tables/${s.customers}/rows-bulk`, { data: [{ id: 'c1', values: {} }, { id: 'c2', values: {} }] });
    await t.post(`/api/tables/${s.orders}/rows-bulk`, { data: [{ id: 'o1', values: { customer: 'c1' } }, { id: 'o2', values: { customer: 'c1' } }, { id: 'o3', values: {} }] });
    const cFields = await fieldsOf(s.customers);
    const single = cFields.map((f) => (f.code === 'orders' ? { ...f, options: { ...f.options, multiple: false } } : f));
    const before = await snapshot(t, s.customers, s.orders);
    const body = expectError(await t.put(`/api/tables/${s.customers}`, { fields: single }), 400);
    assert.match(JSON.stringify(body), /c1 holds more than one link/);
    assert.deepEqual(await snapshot(t, s.customers, s.orders), before);
    // o2 goes to c2: no customer holds two orders, so orders can become single.
    await t.patch(`/api/tables/${s.orders}/rows/o2`, { values: { customer: 'c2' } });
    const put = await t.put(`/api/tables/${s.customers}`, { fields: single });
    assert.equal(put.status, 200, put.text);
    let customers = valuesById((await snapshot(t, s.customers))[s.customers]);
    assert.equal(customers.c1.orders, 'o1');
    assert.equal(customers.c2.orders, 'o2');
    // A one-to-one pair now: a second order for c1 is refused.
    expectError(await t.patch(`/api/tables/${s.orders}/rows/o3`, { values: { customer: 'c1' } }), 409);
    // And the order side becomes multiple: its values become arrays.
    const oFields = (await fieldsOf(s.orders)).map((f) => (f.code === 'customer' ? { ...f, options: { ...f.options, multiple: true } } : f));
    assert.equal((await t.put(`/api/tables/${s.orders}`, { fields: oFields })).status, 200);
    const orders = valuesById((await snapshot(t, s.orders))[s.orders]);
    assert.deepEqual([orders.o1.customer, orders.o2.customer, orders.o3.customer], [['c1'], ['c2'], []]);
    customers = valuesById((await snapshot(t, s.customers))[s.customers]);
    assert.equal(customers.c1.orders, 'o1');
  });

  it('removing one field of a pair removes both; a self-link pair is made and removed on one table', async () => {
    const s = await shop(t);
    const oFields = (await fieldsOf(s.orders)).filter((f) => f.code !== 'customer');
    assert.equal((await t.put(`/api/tables/${s.orders}`, { fields: oFields })).status, 200);
    assert.deepEqual((await fieldsOf(s.customers)).map((f) => f.code), ['name', 'country']);
    // From the inverse side: removing lines from orders removes order from lines.
    const without = (await fieldsOf(s.orders)).filter((f) => f.code !== 'lines');
    assert.equal((await t.put(`/api/tables/${s.orders}`, { fields: without })).status, 200);
    assert.deepEqual((await fieldsOf(s.lines)).map((f) => f.code), ['sku']);
    const code = `people_${++n}`;
    const self = await t.post('/api/tables', { code, name: 'People', fields: [{ code: 'boss', type: 'link', options: { table: code, inverse: { code: 'reports' } } }] });
    assert.equal(self.status, 201, self.text);
    assert.deepEqual((await fieldsOf(code)).map((f) => f.code), ['boss', 'reports']);
    await t.post(`/api/tables/${code}/rows-bulk`, { data: [{ id: 'ann', values: {} }, { id: 'bob', values: { boss: 'ann' } }, { id: 'cy', values: { boss: 'ann' } }] });
    assert.deepEqual((await t.get(`/api/tables/${code}/rows/ann`)).body.values.reports, ['bob', 'cy']);
    const keep = (await fieldsOf(code)).filter((f) => f.code !== 'reports');
    assert.equal((await t.put(`/api/tables/${code}`, { fields: keep })).status, 200);
    assert.deepEqual(await fieldsOf(code), []);
  });

  it('deleting a table: 409 while a one-way link points at it; its pairs\' other fields go with it', async () => {
    const s = await shop(t);
    const code = `notes_${++n}`;
    const notes = await t.post('/api/tables', { code, name: 'Notes', fields: [{ code: 'about', type: 'link', options: { table: s.customers, multiple: true } }] });
    assert.equal(notes.status, 201, notes.text);
    const body = expectError(await t.delete(`/api/tables/${s.customers}`), 409);
    assert.match(body.message as string, /about/);
    assert.equal((await t.get(`/api/tables/${s.customers}`)).status, 200);
    // Both at once, in either order: the one-way link goes with its table. orders.customer is one
    // side of a pair with customers.orders: deleting customers removes it.
    const both = await t.delete('/api/tables/delete-many', [s.ids.customers, notes.body.id]);
    assert.equal(both.status, 200, both.text);
    assert.equal((await t.get(`/api/tables/${code}`)).status, 404);
    assert.deepEqual((await fieldsOf(s.orders)).map((f) => f.code), ['no', 'lines']);
    await t.post(`/api/tables/${s.orders}/rows`, { id: 'o1', values: { no: 1 } });
    assert.equal((await t.post(`/api/tables/${s.lines}/rows`, { id: 'l1', values: { order: 'o1' } })).status, 201);
  });
});
