import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { eachDatabase } from '../support/harness.ts';
import { type ListeningApp, startListening } from '../support/listening.ts';
import { makeKey } from '../access/keys.ts';
import { type SseConnection, openSse } from './sse.ts';

/**
 * CONTRACT §12 and §14 together, as a demanding user checks them: a key's scopes apply to the
 * streams it holds open, not only when they open. A key changed (PUT) so that it may no longer read
 * a table ends its streams of that table within a second, as a revoked key's do; its streams of
 * tables it still reads go on. The same for a stream opened by a signed stream URL, which reads as
 * the key that asked for it.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

eachDatabase('change streams of a key whose access is narrowed', (kind) => {
  let t: ListeningApp;
  const ids: Record<string, string> = {};

  before(async () => {
    t = await startListening(kind, {}, { stream: { heartbeatMs: 300 } });
    for (const code of ['orders', 'customers']) {
      const r = await t.post('/api/tables', { code, name: code, fields: [{ code: 'title', type: 'text' }] });
      assert.equal(r.status, 201, r.text);
      ids[code] = r.body.id;
    }
  });
  after(() => t.close());

  async function open(table: string, key: string): Promise<SseConnection> {
    const c = t.track(await openSse(`${t.base}/api/tables/${table}/changes/stream`, { 'x-api-key': key }));
    assert.equal(c.status, 200);
    await c.until(() => c.comments.includes('open'), 2000, 'open');
    return c;
  }

  /** Changes a key by PUT and answers when; `c` must then end within a second, `goesOn` not. */
  async function endsWithin(keyId: string, change: Record<string, unknown>, c: SseConnection, goesOn: SseConnection[]): Promise<void> {
    const r = await t.put(`/api/api-keys/${keyId}`, change);
    assert.equal(r.status, 200, r.text);
    const at = Date.now();
    await Promise.race([c.ended, sleep(1500)]);
    assert.ok(c.endedAt !== undefined && c.endedAt - at <= 1000, `${JSON.stringify(change)}: the stream ended ${c.endedAt === undefined ? 'never' : `${c.endedAt - at} ms after`}`);
    for (const other of goesOn) assert.equal(other.endedAt, undefined, `${JSON.stringify(change)}: a stream the key may still read ended`);
  }

  const keyId = async (key: string) => (await t.get('/api/api-keys/me', { key })).body.id as string;

  it('a key no longer covering a table, or no longer holding rows:read, ends its streams of it within a second; the rest go on', async () => {
    const key = await makeKey(t, ['rows:read'], [ids.orders, ids.customers]);
    const id = await keyId(key);
    const orders = await open('orders', key);
    const customers = await open('customers', key);
    await endsWithin(id, { tables: [ids.customers] }, orders, [customers]);
    // The stream that goes on still gets its changes.
    assert.equal((await t.post('/api/tables/customers/rows', { id: 'c1', values: { title: 'c' } })).status, 201);
    await customers.until(() => customers.events.length >= 1, 2000, 'a change');
    await endsWithin(id, { scopes: ['schema:read'] }, customers, []);
    // And a reconnect is refused, as any request of the key would be.
    assert.equal((await openSse(`${t.base}/api/tables/customers/changes/stream`, { 'x-api-key': key })).status, 403);
  });

  it('a stream opened by a signed URL ends once the key that asked for it may no longer read the table', async () => {
    const key = await makeKey(t, ['rows:read'], [ids.orders, ids.customers]);
    const id = await keyId(key);
    const issued = await t.post('/api/tables/orders/changes/stream-url', {}, { key });
    assert.equal(issued.status, 200, issued.text);
    const url = new URL(issued.body.url);
    const c = t.track(await openSse(`${t.base}${url.pathname}${url.search}`));
    assert.equal(c.status, 200);
    await c.until(() => c.comments.includes('open'), 2000, 'open');
    const other = await open('customers', key);
    await endsWithin(id, { tables: [ids.customers] }, c, [other]);
    assert.equal((await openSse(`${t.base}${url.pathname}${url.search}`)).status, 403);
  });
});
