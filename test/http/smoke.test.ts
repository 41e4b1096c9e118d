import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';

eachDatabase('smoke', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(kind);
  });
  after(() => t.close());

  it('serves health without a key and resources with one', async () => {
    assert.deepEqual((await t.get('/healthz', { key: null })).body, { status: 'ok' });
    expectError(await t.get('/api/flows', { key: null }), 401);
    const created = await t.post('/api/tables', {
      name: 'Orders', code: 'orders',
      fields: [{ code: 'title', type: 'text', required: true }, { code: 'amount', type: 'number' }],
    });
    assert.equal(created.status, 201, created.text);
    const updated = await t.put(`/api/tables/orders`, {
      fields: [{ id: created.body.fields[1].id, code: 'price' }, { code: 'tags', type: 'list' }, { code: 'n', type: 'boolean', required: true }],
    });
    assert.equal(updated.status, 200, updated.text);
    assert.deepEqual(updated.body.fields.map((f: { code: string }) => f.code), ['price', 'tags', 'n']);
  });
});
