import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { TEST_KEY, type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';
import { shop, snapshot, valuesById } from './support.ts';

/** Link cells in exports and imports (CONTRACT §11): an id, or a JSON array of ids; jsonl keeps JSON and can expand. */

eachDatabase('links: export and import', (kind) => {
  let t: TestApp;
  let s: Awaited<ReturnType<typeof shop>>;
  before(async () => {
    t = await startApp(kind);
    s = await shop(t);
    await t.post(`/api/tables/${s.customers}/rows-bulk`, { data: [{ id: 'c1', values: { name: 'Aki' } }, { id: 'c2', values: {} }] });
    await t.post(`/api/tables/${s.orders}/rows-bulk`, { data: [{ id: 'o1', values: { no: 1, customer: 'c1' } }, { id: 'o2', values: { no: 2, customer: 'c1' } }, { id: 'o3', values: { no: 3 } }] });
  });
  after(() => t.close());

  async function exported(table: string, query: Record<string, string>): Promise<string> {
    const res = await t.app.inject({ method: 'GET', url: `/api/tables/${table}/rows-export?${new URLSearchParams(query)}`, headers: { 'x-api-key': TEST_KEY } });
    assert.equal(res.statusCode, 200, res.body);
    return res.body;
  }
  const importCsv = (table: string, body: string, mode?: string) =>
    t.request('POST', `/api/tables/${table}/rows-import?${new URLSearchParams({ format: 'csv', encoding: 'utf8', ...(mode ? { mode } : {}) })}`, {
      raw: body,
      headers: { 'content-type': 'text/csv' },
    });

  it('exports a single link as the id and a multiple link as a JSON array (csv); jsonl keeps JSON and expands', async () => {
    const csv = await exported(s.customers, { format: 'csv', encoding: 'utf8', newline: 'lf' });
    const [header, c1, c2] = csv.trim().split('\n');
    assert.match(header, /,orders$/);
    assert.match(c1, /,"\[""o1"",""o2""\]"$/);
    assert.match(c2, /,$/);
    const orders = await exported(s.orders, { format: 'csv', encoding: 'utf8', newline: 'lf' });
    assert.match(orders.split('\n')[1], /,1,c1,$/);
    const jsonl = (await exported(s.customers, { format: 'jsonl', encoding: 'utf8', newline: 'lf' })).trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(jsonl.map((r) => r.values.orders), [['o1', 'o2'], []]);
    const expanded = (await exported(s.orders, { format: 'jsonl', encoding: 'utf8', newline: 'lf', expand: 'customer', filter: JSON.stringify({ values: { customer: { _some: { values: { name: { _eq: 'Aki' } } } } } }) }))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(expanded.map((r) => [r.id, r.values.customer.id, r.values.customer.values.orders]), [['o1', 'c1', ['o1', 'o2']], ['o2', 'c1', ['o1', 'o2']]]);
    const body = expectError(await t.get(`/api/tables/${s.orders}/rows-export`, { query: { format: 'csv', encoding: 'utf8', newline: 'lf', expand: 'customer' } }), 400);
    assert.match(body.message as string, /expand/);
  });

  it('imports the same cells: links checked, both sides of a pair follow; an unknown id writes nothing', async () => {
    const before = await snapshot(t, s.customers, s.orders);
    const bad = await importCsv(s.orders, 'id,no,customer\no7,7,c2\no8,8,zz\n');
    const body = expectError(bad, 400);
    assert.match(JSON.stringify(body), /zz/);
    assert.deepEqual(await snapshot(t, s.customers, s.orders), before);
    // Cells of the wrong shape: an array for a single link, a non-array for a multiple link, a repeated id.
    expectError(await importCsv(s.orders, 'id,no,customer\no7,7,"[""c2""]"\n'), 400);
    expectError(await importCsv(s.customers, 'id,orders\nc7,o1\n'), 400);
    expectError(await importCsv(s.customers, 'id,orders\nc7,"[""o1"",""o1""]"\n'), 400);
    assert.deepEqual(await snapshot(t, s.customers, s.orders), before);
    const ok = await importCsv(s.orders, 'id,no,customer\no7,7,c2\no8,8,\n');
    assert.equal(ok.status, 200, ok.text);
    const orders = valuesById((await snapshot(t, s.orders))[s.orders]);
    assert.equal(orders.o7.customer, 'c2');
    assert.equal(orders.o8.customer, null);
    assert.deepEqual((await t.get(`/api/tables/${s.customers}/rows/c2`)).body.values.orders, ['o7']);
    // A multiple link from its JSON array cell, from the customer side.
    const multi = await importCsv(s.customers, 'id,name,orders\nc5,Five,"[""o8"",""o3""]"\n');
    assert.equal(multi.status, 200, multi.text);
    assert.deepEqual((await t.get(`/api/tables/${s.customers}/rows/c5`)).body.values.orders, ['o8', 'o3']);
    assert.equal((await t.get(`/api/tables/${s.orders}/rows/o3`)).body.values.customer, 'c5');
  });
});
