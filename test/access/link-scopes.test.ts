import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';
import { shop } from '../links/support.ts';
import { makeKey } from './keys.ts';

/**
 * Scoped keys and links (CONTRACT §12): `expand` and the link filters (`_some`, `_none`, `_every`)
 * read rows of the tables they reach, so they need rows:read there too, checked before any work.
 */
eachDatabase('scoped keys through links', (kind) => {
  let t: TestApp;
  let s: Awaited<ReturnType<typeof shop>>;
  before(async () => {
    t = await startApp(kind);
    s = await shop(t);
    assert.equal((await t.post(`/api/tables/${s.customers}/rows`, { id: 'c1', values: { name: 'Ada', country: 'JP' } })).status, 201);
    assert.equal((await t.post(`/api/tables/${s.orders}/rows`, { id: 'o1', values: { no: 1, customer: 'c1' } })).status, 201);
  });
  after(() => t.close());

  const jp = { values: { customer: { _some: { values: { country: { _eq: 'JP' } } } } } };

  it('a key reading orders only is refused expand and link filters into customers, naming the table', async () => {
    const key = await makeKey(t, ['rows:read', 'rows:update', 'rows:export'], [s.ids.orders]);
    assert.equal((await t.get(`/api/tables/${s.orders}/rows`, { key })).status, 200, 'its own table');
    assert.equal(expectError(await t.get(`/api/tables/${s.orders}/rows`, { key, query: { expand: 'customer' } }), 403).message, `this key lacks rows:read on table ${s.customers}`);
    assert.equal(expectError(await t.get(`/api/tables/${s.orders}/rows/o1`, { key, query: { expand: 'customer' } }), 403).message, `this key lacks rows:read on table ${s.customers}`);
    expectError(await t.get(`/api/tables/${s.orders}/rows`, { key, query: { filter: jp } }), 403);
    expectError(await t.get(`/api/tables/${s.orders}/rows-aggregate`, { key, query: { filter: jp } }), 403);
    expectError(await t.get(`/api/tables/${s.orders}/rows-export`, { key, query: { format: 'jsonl', expand: 'customer' } }), 403);
    // A write answer expanded: refused before the write, which leaves the row as it was.
    expectError(await t.patch(`/api/tables/${s.orders}/rows/o1`, { values: { no: 2 } }, { key, query: { expand: 'customer' } }), 403);
    assert.equal((await t.get(`/api/tables/${s.orders}/rows/o1`)).body.values.no, 1);
    // _has names a row id only: it reads nothing of customers.
    assert.equal((await t.get(`/api/tables/${s.orders}/rows`, { key, query: { filter: { values: { customer: { _has: 'c1' } } } } })).status, 200);
  });

  it('a key reading both tables may expand and filter through the link', async () => {
    const key = await makeKey(t, ['rows:read'], [s.ids.orders, s.ids.customers]);
    const expanded = await t.get(`/api/tables/${s.orders}/rows/o1`, { key, query: { expand: 'customer' } });
    assert.equal(expanded.status, 200, expanded.text);
    assert.equal(expanded.body.values.customer.id, 'c1');
    const filtered = await t.get(`/api/tables/${s.orders}/rows`, { key, query: { filter: jp } });
    assert.deepEqual(filtered.body.data.map((r: { id: string }) => r.id), ['o1']);
  });
  it('a filter with a problem inside a table the key may not read: 403 naming the table, not a 400 naming that table\'s fields', async () => {
    const key = await makeKey(t, ['rows:read', 'flows:write'], [s.ids.orders]);
    const probe = { values: { customer: { _some: { values: { secretField: { _eq: 1 } } } } } };
    for (const reply of [
      await t.get(`/api/tables/${s.orders}/rows`, { key, query: { filter: probe } }),
      await t.get(`/api/tables/${s.orders}/rows-aggregate`, { key, query: { filter: probe } }),
      await t.post(`/api/tables/${s.orders}/changes/stream-url`, { filter: probe }, { key }),
      await t.post('/api/flows', { name: 'probe', definition: { trigger: { table: s.orders, events: ['create'], filter: probe }, webhook: { url: 'https://example.com/hook' } } }, { key }),
    ]) {
      const body = expectError(reply, 403);
      assert.equal(body.message, `this key lacks rows:read on table ${s.customers}`);
      assert.doesNotMatch(JSON.stringify(body), /secretField/);
    }
    // A key that may read customers is told what is wrong.
    const both = await makeKey(t, ['rows:read'], [s.ids.orders, s.ids.customers]);
    const told = expectError(await t.get(`/api/tables/${s.orders}/rows`, { key: both, query: { filter: probe } }), 400);
    assert.match(JSON.stringify(told), /secretField/);
  });
});
