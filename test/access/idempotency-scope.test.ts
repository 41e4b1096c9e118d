import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { after, before, it } from 'node:test';
import { TEST_KEY, type TestApp, eachDatabase, expectError, startApp, withKey } from '../support/harness.ts';
import { heldScopesNow } from '../../src/store/transaction-hooks.ts';

/**
 * The request scope of Idempotency-Key's held transactions (store/transaction-hooks.ts heldScope):
 * an AsyncLocalStorage, which on Node 20 runs a promise hook for every promise of the process while
 * enabled. It is held only while a request runs in a held transaction, and disabled once none does,
 * whatever way the request ended; a create keeping its answer in its own write never takes it.
 */

eachDatabase('Idempotency-Key request scope', (kind) => {
  let t: TestApp;
  let n = 0;
  const fresh = () => `scope-${++n}-${Math.random().toString(36).slice(2)}`;

  before(async () => {
    t = await startApp(kind);
    const r = await t.post('/api/tables', { code: 'orders', name: 'Orders', fields: [{ code: 'title', type: 'text', required: true }] });
    assert.equal(r.status, 201, r.text);
  });
  after(() => t.close());

  /** A keyed CSV import whose file has begun but not ended, 200 ms on: its request is running. */
  async function importUnderWay() {
    const file = new PassThrough();
    file.write('title\nfirst\n');
    const running = t.app.inject({
      method: 'POST',
      url: '/api/tables/orders/rows-import?format=csv&encoding=utf8',
      headers: { 'content-type': 'text/csv', 'idempotency-key': fresh(), 'x-api-key': TEST_KEY },
      payload: file,
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    return { file, running };
  }

  it('is held while a request with a key runs in its held transaction, and given up once it has answered', async () => {
    assert.equal(heldScopesNow(), 0);
    const { file, running } = await importUnderWay();
    assert.equal(heldScopesNow(), 1, 'the import runs in its held transaction');
    file.end('second\n');
    const done = await running;
    assert.equal(done.statusCode, 200, done.body);
    assert.equal(heldScopesNow(), 0);
  });

  it('is not taken by a create that keeps its answer in its own write, nor left held by any other ending', async () => {
    const created = await t.post('/api/tables/orders/rows', { id: 'o1', values: { title: 'one' } }, withKey('create-1'));
    assert.equal(created.status, 201, created.text);
    assert.equal(heldScopesNow(), 0);
    // Its replay, and a create refused (409: the id exists), which runs again in a held transaction.
    assert.equal((await t.post('/api/tables/orders/rows', { id: 'o1', values: { title: 'one' } }, withKey('create-1'))).headers['idempotent-replayed'], 'true');
    expectError(await t.post('/api/tables/orders/rows', { id: 'o1', values: { title: 'again' } }, withKey(fresh())), 409);
    assert.equal(heldScopesNow(), 0);
    // Writes of the general way: a patch, a 404 kept, a 422, a bulk and a delete.
    const key = fresh();
    assert.equal((await t.patch('/api/tables/orders/rows/o1', { values: { title: 'patched' } }, withKey(key))).status, 200);
    expectError(await t.patch('/api/tables/orders/rows/o1', { values: { title: 'other' } }, withKey(key)), 422);
    expectError(await t.patch('/api/tables/orders/rows/none', { values: { title: 'x' } }, withKey(fresh())), 404);
    assert.equal((await t.post('/api/tables/orders/rows-bulk', { data: [{ values: { title: 'b' } }] }, withKey(fresh()))).status, 201);
    assert.equal((await t.request('DELETE', '/api/tables/orders/rows/o1', withKey(fresh()))).status, 204);
    assert.equal(heldScopesNow(), 0);
    // Several at once.
    const many = await Promise.all(Array.from({ length: 8 }, (_, i) => t.patch(`/api/tables/orders/rows/none-${i}`, { values: { title: 'x' } }, withKey(fresh()))));
    assert.deepEqual(many.map((r) => r.status), Array(8).fill(404));
    assert.equal(heldScopesNow(), 0);
  });

  it('is given up when the client goes before the answer', async () => {
    const { file, running } = await importUnderWay();
    assert.equal(heldScopesNow(), 1);
    file.destroy(new Error('the client went away'));
    await running.catch(() => undefined);
    for (let i = 0; i < 50 && heldScopesNow() > 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(heldScopesNow(), 0);
  });
});
