import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type TestApp, eachDatabase, expectError, freshTable, startApp } from '../support/harness.ts';
import { shop, snapshot } from './support.ts';

/**
 * CONTRACT §11 as a demanding user reads it, where the rest of test/links/ left it unproven: a
 * refusal names what the user wrote (the field, the bulk item, the import line and column) and the
 * tables as the user named them, and changes nothing.
 */

eachDatabase('links: the contract, audited', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(kind);
  });
  after(() => t.close());

  /** A one-to-one pair: desks.owner (single) and people.desk (single). */
  async function oneToOne(): Promise<{ people: string; desks: string }> {
    const people = await freshTable(t, 'people', []);
    const desks = await freshTable(t, 'desks', [{ code: 'owner', type: 'link', options: { table: people.code, inverse: { code: 'desk', multiple: false } } }]);
    assert.equal((await t.post(`/api/tables/${people.code}/rows-bulk`, { data: [{ id: 'p1', values: {} }, { id: 'p2', values: {} }] })).status, 201);
    return { people: people.code, desks: desks.code };
  }

  it('a second link on a one-to-one pair in a bulk is refused at the item that makes it, naming the field written', async () => {
    const { people, desks } = await oneToOne();
    const before = await snapshot(t, people, desks);
    const r = await t.post(`/api/tables/${desks}/rows-bulk`, { data: [{ id: 'd1', values: { owner: 'p2' } }, { id: 'd2', values: { owner: 'p1' } }, { id: 'd3', values: { owner: 'p1' } }] });
    const body = expectError(r, 409);
    assert.match(body.message as string, /^data\[2\]: /);
    assert.match(body.message as string, /row p1 already links to row d2 in field desk/);
    assert.deepEqual(body.details, [{ path: 'values.owner', message: 'row p1 already links to row d2 in field desk' }]);
    assert.deepEqual(await snapshot(t, people, desks), before);
    // A row linked before the bulk: the item linking it again is named, whatever its place.
    assert.equal((await t.post(`/api/tables/${desks}/rows`, { id: 'd1', values: { owner: 'p1' } })).status, 201);
    const again = expectError(await t.post(`/api/tables/${desks}/rows-bulk`, { data: [{ id: 'd4', values: { owner: 'p1' } }, { id: 'd5', values: { owner: 'p2' } }] }), 409);
    assert.match(again.message as string, /^data\[0\]: row p1 already links to row d1 in field desk/);
  });

  it('an import names the line and the column of a link to no row, or of a second link on a one-to-one pair', async () => {
    const { people, desks } = await oneToOne();
    const imp = (query: string, csv: string) => t.request('POST', `/api/tables/${desks}/rows-import?format=csv&encoding=utf8&${query}`, { raw: csv, headers: { 'content-type': 'text/csv' } });
    const before = await snapshot(t, people, desks);
    // Atomic: a 400 whose details name the line and the column, nothing written.
    let body = expectError(await imp('atomic=true', 'id,owner\nd1,p1\nd2,nobody\n'), 400);
    assert.deepEqual(body.details, [{ path: 'line 3, column owner', message: `no row nobody in table ${people}` }]);
    body = expectError(await imp('atomic=true', 'id,owner\nd1,p1\nd2,p2\nd3,p1\n'), 400);
    assert.deepEqual(body.details, [{ path: 'line 4, column owner', message: 'row p1 already links to row d1 in field desk' }]);
    assert.deepEqual(await snapshot(t, people, desks), before);
    // Not atomic: the rows without problems are written, the others named by line and column.
    const r = await imp('atomic=false', 'id,owner\nd1,p1\nd2,nobody\nd3,p1\n');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, {
      created: 1,
      updated: 0,
      failed: 2,
      problems: [
        { line: 3, column: 'owner', message: `no row nobody in table ${people}` },
        { line: 4, column: 'owner', message: 'row p1 already links to row d1 in field desk' },
      ],
      warnings: [],
    });
    assert.equal((await t.get(`/api/tables/${people}/rows/p1`)).body.values.desk, 'd1');
  });

  it('a value that is no row id is refused saying what was written: the string itself, or its kind', async () => {
    const s = await shop(t);
    const before = await snapshot(t, s.customers, s.orders);
    const refused = async (table: string, values: Record<string, unknown>) => {
      const body = expectError(await t.post(`/api/tables/${table}/rows`, { values }), 400);
      return (body.details as { path: string; message: string }[]).map((d) => `${d.path}: ${d.message}`);
    };
    const id = 'a row id (1 to 128 of A-Z a-z 0-9 _ . : @ -)';
    assert.deepEqual(await refused(s.orders, { customer: '' }), [`values.customer: must be ${id} or null, not ""`]);
    assert.deepEqual(await refused(s.orders, { customer: 'has space' }), [`values.customer: must be ${id} or null, not "has space"`]);
    assert.deepEqual(await refused(s.orders, { customer: { id: 'c1' } }), [`values.customer: must be ${id} or null, not an object`]);
    assert.deepEqual(await refused(s.customers, { orders: ['o1', '/x'] }), [`values.orders: [1] must be ${id}, not "/x"`]);
    assert.deepEqual(await refused(s.customers, { orders: [{ id: 'o1' }] }), [`values.orders: [0] must be ${id}, not an object`]);
    assert.deepEqual(await refused(s.customers, { orders: { id: 'o1' } }), ['values.orders: must be an array of row ids (a multiple link), not an object']);
    assert.deepEqual(await snapshot(t, s.customers, s.orders), before);
  });

  it('_eq or _has null on a link answers as on any column: use {"_isNull": true}', async () => {
    const s = await shop(t);
    const hint = 'cannot be null; use {"_isNull": true}';
    for (const [table, code, op] of [[s.orders, 'customer', '_eq'], [s.orders, 'customer', '_has'], [s.customers, 'orders', '_has']]) {
      const filter = { values: { [code]: { [op]: null } } };
      const list = expectError(await t.get(`/api/tables/${table}/rows`, { query: { filter } }), 400);
      assert.deepEqual(list.details, [{ path: `filter.values.${code}.${op}`, message: hint }]);
      const aggregate = expectError(await t.get(`/api/tables/${table}/rows-aggregate`, { query: { filter } }), 400);
      assert.deepEqual(aggregate.details, [{ path: `filter.values.${code}.${op}`, message: hint }]);
    }
    // Nested in a link filter too.
    const nested = expectError(await t.get(`/api/tables/${s.lines}/rows`, { query: { filter: { values: { order: { _some: { values: { customer: { _eq: null } } } } } } } }), 400);
    assert.deepEqual(nested.details, [{ path: 'filter.values.order._some.values.customer._eq', message: hint }]);
  });

  it('a link field made required is refused for what it is (a link), whether or not rows hold null in it', async () => {
    const s = await shop(t);
    await t.post(`/api/tables/${s.customers}/rows`, { id: 'c1', values: {} });
    await t.post(`/api/tables/${s.orders}/rows-bulk`, { data: [{ id: 'o1', values: { customer: 'c1' } }, { id: 'o2', values: {} }] });
    const fields = (await t.get(`/api/tables/${s.orders}`)).body.fields as { code: string }[];
    const required = fields.map((f) => (f.code === 'customer' ? { ...f, required: true } : f));
    const expected = [{ path: 'fields[1].required', message: 'a link field cannot be required (its links go when the rows they name are deleted)' }];
    assert.deepEqual(expectError(await t.put(`/api/tables/${s.orders}`, { fields: required }), 400).details, expected);
    // o2 linked too: no row holds null, still refused, the same way.
    assert.equal((await t.patch(`/api/tables/${s.orders}/rows/o2`, { values: { customer: 'c1' } })).status, 200);
    assert.deepEqual(expectError(await t.put(`/api/tables/${s.orders}`, { fields: required }), 400).details, expected);
    // A new required link field on a table with rows: the same answer.
    const added = [...fields, { code: 'seller', type: 'link', required: true, options: { table: s.customers } }];
    assert.deepEqual(expectError(await t.put(`/api/tables/${s.orders}`, { fields: added }), 400).details, [
      { path: 'fields[3].required', message: 'a link field cannot be required (its links go when the rows they name are deleted)' },
    ]);
    assert.deepEqual((await t.get(`/api/tables/${s.orders}`)).body.fields, fields);
  });

  it('deleting a table a one-way link points at: the 409 names the fields and the tables by their codes', async () => {
    const s = await shop(t);
    const notes = await freshTable(t, 'notes', [{ code: 'about', type: 'link', options: { table: s.customers, multiple: true } }]);
    const body = expectError(await t.delete(`/api/tables/${s.customers}`), 409);
    assert.equal(body.message, `table ${s.customers} is the target of link fields about of table ${notes.code}; remove them first`);
    assert.deepEqual(body.details, [{ path: `${notes.code}.about`, message: `field about of table ${notes.code} (${notes.id}) links to this table` }]);
    // delete-many of the target alone is refused the same way; with the linking table it goes.
    const many = expectError(await t.delete('/api/tables/delete-many', [s.ids.customers]), 409);
    assert.match(many.message as string, new RegExp(`about of table ${notes.code}`));
    assert.equal((await t.get(`/api/tables/${s.customers}`)).status, 200);
    assert.equal((await t.delete('/api/tables/delete-many', [s.ids.customers, notes.id])).status, 200);
  });
});
