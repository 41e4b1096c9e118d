import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { dataChecksum } from '../support/data-checksum.ts';
import { type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';
import { makeKey } from './keys.ts';

/**
 * CONTRACT §12 as a demanding user checks it, for what the other access tests leave out: a batch's
 * `expand` needs rows:read on the tables it reaches, as every other expand does.
 */

eachDatabase('access contract audit', (kind) => {
  let t: TestApp;
  let ordersId: string;
  let customersId: string;

  before(async () => {
    t = await startApp(kind);
    let r = await t.post('/api/tables', { code: 'customers', name: 'Customers', fields: [{ code: 'name', type: 'text' }] });
    assert.equal(r.status, 201, r.text);
    customersId = r.body.id;
    r = await t.post('/api/tables', { code: 'orders', name: 'Orders', fields: [{ code: 'title', type: 'text' }, { code: 'customer', type: 'link', options: { table: 'customers' } }] });
    assert.equal(r.status, 201, r.text);
    ordersId = r.body.id;
    assert.equal((await t.post('/api/tables/customers/rows', { id: 'c1', values: { name: 'secret name' } })).status, 201);
    assert.equal((await t.post('/api/tables/orders/rows', { id: 'o1', values: { title: 'one', customer: 'c1' } })).status, 201);
  });
  after(() => t.close());

  it('refuses a batch whose expand reaches a table the key may not read, naming it, and writes nothing', async () => {
    const key = await makeKey(t, ['rows:create', 'rows:update'], [ordersId]);
    const before = await dataChecksum(t);
    const update = { operations: [{ type: 'update', tableId: 'orders', id: 'o1', values: { title: 'changed' } }] };
    const refused = expectError(await t.post('/api/rows-batch?expand=customer', update, { key }), 403);
    assert.equal(refused.message, 'this key lacks rows:read on table customers');
    assert.doesNotMatch(JSON.stringify(refused), /secret name/);
    const create = { operations: [{ type: 'create', tableId: 'orders', values: { title: 'two', customer: 'c1' } }] };
    expectError(await t.post('/api/rows-batch?expand=customer', create, { key }), 403);
    assert.equal(await dataChecksum(t), before, 'a refused batch wrote');
    // Without expand the same batch is the key's to make; with rows:read on customers, expand too.
    assert.equal((await t.post('/api/rows-batch', update, { key })).status, 200);
    const reader = await makeKey(t, ['rows:update', 'rows:read'], [ordersId, customersId]);
    const expanded = await t.post('/api/rows-batch?expand=customer', update, { key: reader });
    assert.equal(expanded.status, 200, expanded.text);
    assert.equal(expanded.body.data[0].row.values.customer.values.name, 'secret name');
  });
});
