import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type TestApp, eachDatabase, expectError, freshTable, startApp } from '../support/harness.ts';
import { shop, snapshot } from '../links/support.ts';
import { makeKey } from './keys.ts';

/**
 * `expand` on the answers of writes (CONTRACT §11) reads the linked rows, so it needs rows:read on
 * the tables it reaches (§12): in a batch as in a single write, and on the write's own table when a
 * self-link reaches it (a key that may only write a table may not read its other rows through an
 * answer). Refused before anything is written.
 */
eachDatabase('scoped keys: expand on write answers', (kind) => {
  let t: TestApp;
  let s: Awaited<ReturnType<typeof shop>>;
  before(async () => {
    t = await startApp(kind);
    s = await shop(t);
    assert.equal((await t.post(`/api/tables/${s.customers}/rows`, { id: 'c1', values: { name: 'Ada', country: 'JP' } })).status, 201);
  });
  after(() => t.close());

  it('a batch expanding into a table the key may not read is refused (403 naming it), writing nothing', async () => {
    const key = await makeKey(t, ['rows:read', 'rows:create'], [s.ids.orders]);
    const before = await snapshot(t, s.customers, s.orders);
    const ops = { operations: [{ type: 'create', tableId: s.orders, id: 'o1', values: { customer: 'c1' } }] };
    const refused = expectError(await t.post('/api/rows-batch', ops, { key, query: { expand: 'customer' } }), 403);
    assert.equal(refused.message, `this key lacks rows:read on table ${s.customers}`);
    assert.deepEqual(await snapshot(t, s.customers, s.orders), before);
    // Without expand the same batch runs; a key reading customers too gets the record.
    const reader = await makeKey(t, ['rows:read', 'rows:create'], [s.ids.orders, s.ids.customers]);
    const done = await t.post('/api/rows-batch', ops, { key: reader, query: { expand: 'customer' } });
    assert.equal(done.status, 200, done.text);
    assert.equal(done.body.data[0].row.values.customer.values.name, 'Ada');
  });

  it('a self-link expanded on a write needs rows:read on the table itself', async () => {
    const people = await freshTable(t, 'people', [{ code: 'name', type: 'text' }]);
    // The self-link added once the table exists (its code is known then).
    const fields = (await t.get(`/api/tables/${people.code}`)).body.fields;
    assert.equal((await t.put(`/api/tables/${people.code}`, { fields: [...fields, { code: 'boss', type: 'link', options: { table: people.code } }] })).status, 200);
    assert.equal((await t.post(`/api/tables/${people.code}/rows`, { id: 'ann', values: { name: 'Ann (secret)' } })).status, 201);
    const writer = await makeKey(t, ['rows:create', 'rows:update'], [people.id]);
    const before = await snapshot(t, people.code);
    const refusals = [
      await t.post(`/api/tables/${people.code}/rows`, { id: 'bob', values: { boss: 'ann' } }, { key: writer, query: { expand: 'boss' } }),
      await t.post(`/api/tables/${people.code}/rows-bulk`, { data: [{ id: 'bob', values: { boss: 'ann' } }] }, { key: writer, query: { expand: 'boss' } }),
      await t.post('/api/rows-batch', { operations: [{ type: 'create', tableId: people.code, id: 'bob', values: { boss: 'ann' } }] }, { key: writer, query: { expand: 'boss' } }),
    ];
    for (const r of refusals) assert.equal(expectError(r, 403).message, `this key lacks rows:read on table ${people.code}`);
    assert.deepEqual(await snapshot(t, people.code), before);
    // The same write without expand is the writer's to make; with rows:read it may expand.
    assert.equal((await t.post(`/api/tables/${people.code}/rows`, { id: 'bob', values: { boss: 'ann' } }, { key: writer })).status, 201);
    const reader = await makeKey(t, ['rows:create', 'rows:read'], [people.id]);
    const expanded = await t.post(`/api/tables/${people.code}/rows`, { id: 'cy', values: { boss: 'ann' } }, { key: reader, query: { expand: 'boss' } });
    assert.equal(expanded.status, 201, expanded.text);
    assert.equal(expanded.body.values.boss.values.name, 'Ann (secret)');
    // An export-only key reads the whole table anyway: a filter through the self-link is its to use.
    const exporter = await makeKey(t, ['rows:export'], [people.id]);
    const file = await t.get(`/api/tables/${people.code}/rows-export`, { key: exporter, query: { format: 'jsonl', encoding: 'utf8', newline: 'lf', filter: { values: { boss: { _some: { id: { _eq: 'ann' } } } } } } });
    assert.equal(file.status, 200, file.text);
    assert.equal(file.text.trim().split('\n').length, 2);
  });
});
