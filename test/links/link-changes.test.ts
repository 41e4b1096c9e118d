import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type TestApp, eachDatabase, startApp } from '../support/harness.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';
import { until } from '../support/wire.ts';
import { shop } from './support.ts';

/** A link change is a row change (CONTRACT §11): entries on both sides of a pair, and for unlink and cascade; webhooks follow. */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Change = Record<string, any>;

eachDatabase('links: change entries and webhooks', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(kind, { ROWHOUSE_WEBHOOK_ALLOW_PRIVATE: 'true', ROWHOUSE_WEBHOOK_RETRY_BASE_MS: '50' }, { webhookPollMs: 100 });
    t.app.webhooks.start();
  });
  after(() => t.close());

  const feed = async (table: string): Promise<Change[]> => {
    const r = await t.get(`/api/tables/${table}/changes`, { query: { limit: '1000' } });
    assert.equal(r.status, 200, r.text);
    return r.body.data;
  };
  const brief = (changes: Change[]) => changes.map((c) => [c.type, c.rowId, c.changedFields]);

  it('records both sides of a pair, and the updates and deletes that unlink and cascade cause', async () => {
    const s = await shop(t);
    await t.post(`/api/tables/${s.customers}/rows`, { id: 'c1', values: {} });
    await t.post(`/api/tables/${s.orders}/rows`, { id: 'o1', values: { customer: 'c1' } });
    await t.post(`/api/tables/${s.lines}/rows`, { id: 'l1', values: { order: 'o1' } });
    assert.deepEqual(brief(await feed(s.customers)), [['create', 'c1', null], ['update', 'c1', ['orders']]]);
    assert.equal((await feed(s.customers))[1].row.values.orders[0], 'o1');
    assert.deepEqual(brief(await feed(s.orders)), [['create', 'o1', null], ['update', 'o1', ['lines']]]);
    // Deleting the customer unlinks its order (an update of o1); deleting the order then cascades to its line.
    assert.equal((await t.delete(`/api/tables/${s.customers}/rows/c1`)).status, 204);
    const orders = await feed(s.orders);
    assert.deepEqual(brief(orders).slice(2), [['update', 'o1', ['customer']]]);
    assert.equal(orders[2].row.values.customer, null);
    assert.equal((await t.delete(`/api/tables/${s.orders}/rows/o1`)).status, 204);
    assert.deepEqual(brief(await feed(s.lines)), [['create', 'l1', null], ['delete', 'l1', null]]);
  });

  it('delivers the inverse side\'s update to a flow of the target table, whose filter may test the link, or look through it', async () => {
    const s = await shop(t);
    const rx = await new WebhookReceiver().start();
    const rxThrough = await new WebhookReceiver().start();
    try {
      const flow = await t.post('/api/flows', {
        name: 'linked orders',
        enabled: true,
        definition: { trigger: { table: s.customers, events: ['update'], filter: { values: { orders: { _has: 'o2' } } } }, webhook: { url: rx.url() } },
      });
      assert.equal(flow.status, 201, flow.text);
      // A trigger may look through the link too: the inverse side's update passes once the customer has an order numbered 1.
      const through = await t.post('/api/flows', {
        name: 'through',
        enabled: true,
        definition: { trigger: { table: s.customers, events: ['update'], filter: { values: { orders: { _some: { values: { no: { _eq: 1 } } } } } } }, webhook: { url: rxThrough.url() } },
      });
      assert.equal(through.status, 201, through.text);
      await t.post(`/api/tables/${s.customers}/rows`, { id: 'c1', values: {} });
      await t.post(`/api/tables/${s.orders}/rows`, { id: 'o1', values: { customer: 'c1' } });
      await t.post(`/api/tables/${s.orders}/rows`, { id: 'o2', values: { no: 1, customer: 'c1' } });
      await until('the deliveries', () => rx.received.length >= 1 && rxThrough.received.length >= 1, 10_000);
      await new Promise((r) => setTimeout(r, 300));
      for (const received of [rx.received, rxThrough.received]) {
        const bodies: Change[] = received.map((a) => a.body);
        assert.equal(bodies.length, 1, JSON.stringify(bodies));
        assert.equal(bodies[0].change.rowId, 'c1');
        assert.deepEqual(bodies[0].change.row.values.orders, ['o1', 'o2']);
        assert.deepEqual(bodies[0].change.changedFields, ['orders']);
      }
    } finally {
      await rx.stop();
      await rxThrough.stop();
    }
  });
});
