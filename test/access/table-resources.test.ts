import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { dataChecksum } from '../support/data-checksum.ts';
import { type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';
import { until } from '../support/wire.ts';
import { makeKey } from './keys.ts';

/**
 * Resources that belong to a table (CONTRACT §12): a key limited to some tables lists and reads
 * only the flows they trigger (and drafts, which name no table), the deliveries of their changes
 * and the API keys within them, is refused another table's with a 403 naming it, and cannot
 * create, move, change, delete or retry a flow on a table outside its own. The deliveries are real: a receiver on
 * 127.0.0.1 answers 500, so each fails after its one attempt.
 */

const ENV = { ROWHOUSE_WEBHOOK_ALLOW_PRIVATE: 'true', ROWHOUSE_WEBHOOK_ATTEMPTS: '1', ROWHOUSE_WEBHOOK_TIMEOUT_MS: '2000' };

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Item = Record<string, any>;
const ids = (items: Item[]) => items.map((i) => i.id as string).sort();

eachDatabase('resources that belong to a table, for a key limited to some tables', (kind) => {
  let t: TestApp;
  let receiver: WebhookReceiver;
  let hook: string;
  let ordersId: string;
  const flows: Record<'orders' | 'customers' | 'draft', string> = { orders: '', customers: '', draft: '' };
  const deliveries: Record<'orders' | 'customers', string> = { orders: '', customers: '' };
  /** flows:read and flows:write on orders alone. */
  let key: string;

  const definition = (table: string) => ({ trigger: { table, events: ['create'] }, webhook: { url: hook } });

  before(async () => {
    receiver = await new WebhookReceiver().start();
    receiver.answer = () => 500;
    hook = receiver.url();
    t = await startApp(kind, ENV, { webhookPollMs: 50 });
    t.app.webhooks.start();
    for (const code of ['orders', 'customers']) {
      const r = await t.post('/api/tables', { code, name: code, fields: [{ code: 'title', type: 'text' }] });
      assert.equal(r.status, 201, r.text);
      if (code === 'orders') ordersId = r.body.id;
    }
    for (const table of ['orders', 'customers'] as const) {
      const f = await t.post('/api/flows', { name: `on ${table}`, enabled: true, definition: definition(table) });
      assert.equal(f.status, 201, f.text);
      flows[table] = f.body.id;
      assert.equal((await t.post(`/api/tables/${table}/rows`, { values: { title: 'one' } })).status, 201);
    }
    const draft = await t.post('/api/flows', { name: 'draft' });
    assert.equal(draft.status, 201, draft.text);
    flows.draft = draft.body.id;
    for (const table of ['orders', 'customers'] as const) {
      const flowId = flows[table];
      deliveries[table] = await until(`the failed delivery of ${table}`, async () => {
        const r = await t.get('/api/flow-deliveries', { query: { filter: { flowId: { eq: flowId }, status: { eq: 'failed' } } } });
        return r.body.data[0]?.id as string | undefined;
      }, 15_000);
    }
    key = await makeKey(t, ['flows:read', 'flows:write'], [ordersId]);
  });
  after(async () => {
    await t.close();
    await receiver.stop();
  });

  it('lists only the flows of the key’s tables and drafts, and only their deliveries; a full key lists all', async () => {
    const listed = await t.get('/api/flows', { key });
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(ids(listed.body.data), [flows.orders, flows.draft].sort());
    assert.deepEqual(ids((await t.get('/api/flows')).body.data), Object.values(flows).sort());
    // A filter that would find the other table's flow finds nothing: the limit is part of the query.
    const filtered = await t.get('/api/flows', { key, query: { filter: { name: { eq: 'on customers' } } } });
    assert.deepEqual(filtered.body.data, []);
    // Paging counts only what the key sees.
    const first = await t.get('/api/flows', { key, query: { paging: { limit: 1 } } });
    const second = await t.get('/api/flows', { key, query: { paging: { limit: 1, offset: 1 } } });
    assert.deepEqual([first.body.pagination.nextOffset, second.body.pagination.nextOffset], [1, null]);
    assert.deepEqual(ids([...first.body.data, ...second.body.data]), [flows.orders, flows.draft].sort());

    const delivered = await t.get('/api/flow-deliveries', { key });
    assert.equal(delivered.status, 200, delivered.text);
    assert.deepEqual(ids(delivered.body.data), [deliveries.orders]);
    assert.deepEqual(ids((await t.get('/api/flow-deliveries')).body.data), Object.values(deliveries).sort());
    const byFlow = await t.get('/api/flow-deliveries', { key, query: { filter: { flowId: { eq: flows.customers } } } });
    assert.deepEqual(byFlow.body.data, []);
  });

  it('reads a flow or delivery of its tables, and a draft, and refuses another table’s with a 403 naming it', async () => {
    for (const id of [flows.orders, flows.draft]) assert.equal((await t.get(`/api/flows/${id}`, { key })).status, 200);
    assert.equal((await t.get(`/api/flow-deliveries/${deliveries.orders}`, { key })).status, 200);
    const flow = expectError(await t.get(`/api/flows/${flows.customers}`, { key }), 403);
    assert.equal(flow.message, 'this key lacks flows:read on table customers');
    const delivery = expectError(await t.get(`/api/flow-deliveries/${deliveries.customers}`, { key, query: { relations: ['createdByMember'] } }), 403);
    assert.equal(delivery.message, 'this key lacks flows:read on table customers');
    // Not there at all: 404, as for any key.
    expectError(await t.get('/api/flows/00000000-0000-4000-8000-000000000000', { key }), 404);
  });

  it('refuses to create, move, change, delete or retry a flow on a table outside its own, naming the table, and changes nothing', async () => {
    const before = await dataChecksum(t);
    const refusals = [
      await t.post('/api/flows', { name: 'x', definition: definition('customers') }, { key }),
      await t.post('/api/flows/create-many', [{ name: 'ok', definition: definition('orders') }, { name: 'x', definition: definition('customers') }], { key }),
      await t.put(`/api/flows/${flows.orders}`, { definition: definition('customers') }, { key }),
      await t.put(`/api/flows/${flows.draft}`, { definition: definition('customers') }, { key }),
      await t.put(`/api/flows/${flows.customers}`, { name: 'renamed' }, { key }),
      await t.put(`/api/flows/${flows.customers}`, { definition: definition('orders') }, { key }),
      await t.put('/api/flows/update-many', [{ id: flows.orders, name: 'ok' }, { id: flows.customers, enabled: false }], { key }),
      await t.delete(`/api/flows/${flows.customers}`, undefined, { key }),
      await t.delete('/api/flows/delete-many', [flows.customers], { key }),
      await t.post(`/api/flow-deliveries/${deliveries.customers}/retry`, {}, { key }),
    ];
    for (const r of refusals) assert.match(String(expectError(r, 403).message), /^(\[\d\]: )?this key lacks flows:write on table customers$/);
    assert.equal(await dataChecksum(t), before);
    // Its own table's: allowed.
    const made = await t.post('/api/flows', { name: 'mine', definition: definition('orders') }, { key });
    assert.equal(made.status, 201, made.text);
    assert.equal(made.body.definition.trigger.table, ordersId);
    assert.equal((await t.put(`/api/flows/${made.body.id}`, { name: 'mine, renamed' }, { key })).status, 200);
    const retried = await t.post(`/api/flow-deliveries/${deliveries.orders}/retry`, {}, { key });
    assert.equal(retried.status, 200, retried.text);
    assert.equal(retried.body.status, 'failed');
    assert.equal((await t.delete(`/api/flows/${made.body.id}`, undefined, { key })).status, 200);
  });

  it('shows a key manager limited to some tables only the keys within them, and refuses it another’s naming the table', async () => {
    const manager = await makeKey(t, ['keys:manage', 'flows:read'], [ordersId]);
    const made = async (tables: string[]) => {
      const r = await t.post('/api/api-keys', { name: `on ${tables.join('+')}`, scopes: ['flows:read'], tables });
      assert.equal(r.status, 201, r.text);
      return r.body.id as string;
    };
    const [mine, theirs, everywhere] = [await made(['orders']), await made(['orders', 'customers']), await made(['*'])];
    const listed = await t.get('/api/api-keys', { key: manager, query: { paging: { limit: 100 } } });
    assert.equal(listed.status, 200, listed.text);
    const seen = ids(listed.body.data);
    assert.deepEqual([seen.includes(mine), seen.includes(theirs), seen.includes(everywhere)], [true, false, false]);
    for (const k of listed.body.data) assert.deepEqual(k.tables, [ordersId], `${k.name}: outside the manager's tables`);
    assert.equal((await t.get(`/api/api-keys/${mine}`, { key: manager })).status, 200);
    assert.equal(expectError(await t.get(`/api/api-keys/${theirs}`, { key: manager }), 403).message, 'this key lacks keys:manage on table customers');
    assert.equal(expectError(await t.get(`/api/api-keys/${everywhere}`, { key: manager }), 403).message, 'this key lacks keys:manage on every table');
    const all = ids((await t.get('/api/api-keys', { query: { paging: { limit: 100 } } })).body.data);
    assert.deepEqual([mine, theirs, everywhere].filter((id) => !all.includes(id)), []);
  });

  it('lets a key on every table, or the service’s own, see and change every flow', async () => {
    const wide = await makeKey(t, ['flows:read', 'flows:write']);
    assert.deepEqual(ids((await t.get('/api/flows', { key: wide })).body.data), Object.values(flows).sort());
    assert.equal((await t.get(`/api/flow-deliveries/${deliveries.customers}`, { key: wide })).status, 200);
    assert.equal((await t.put(`/api/flows/${flows.customers}`, { description: 'seen' }, { key: wide })).status, 200);
  });
});
