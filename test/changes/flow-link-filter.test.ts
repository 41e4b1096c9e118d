import assert from 'node:assert/strict';
import type { KyselyPlugin } from 'kysely';
import { after, before, it } from 'node:test';
import { type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';
import { WebhookReceiver as Receiver } from '../support/webhook-receiver.ts';
import { until } from '../support/wire.ts';
import { makeKey } from '../access/keys.ts';
import { DeliveryStore } from '../../src/events/delivery-store.ts';
import { TableCatalog } from '../../src/store/table-catalog.ts';

/**
 * A flow's trigger filter is the rows grammar, CONTRACT §11's link operators included: `_some`,
 * `_none` and `_every` judge the rows the changed row links to after the change (as they are when
 * the flow plans it), nested through links as a list's filter is. A bad inner filter is a 400 by
 * its path; the tables such a filter reaches need rows:read for a limited key (§12); a filter that
 * no longer fits (a linked field or table deleted since) fails the delivery with why.
 */

const FAST = { ROWHOUSE_WEBHOOK_ALLOW_PRIVATE: 'true', ROWHOUSE_WEBHOOK_RETRY_BASE_MS: '50', ROWHOUSE_WEBHOOK_TIMEOUT_MS: '2000', ROWHOUSE_WEBHOOK_ATTEMPTS: '1' };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const JP = { values: { country: { _eq: 'JP' } } };

eachDatabase('flows filtered through links', (kind) => {
  let t: TestApp;
  const ids: Record<string, string> = {};

  before(async () => {
    t = await startApp(kind, FAST, { webhookPollMs: 50 });
    t.app.webhooks.start();
    const made = async (body: unknown) => {
      const r = await t.post('/api/tables', body);
      assert.equal(r.status, 201, r.text);
      return r.body.id as string;
    };
    ids.regions = await made({ code: 'regions', name: 'Regions', fields: [{ code: 'name', type: 'text' }] });
    ids.customers = await made({
      code: 'customers',
      name: 'Customers',
      fields: [
        { code: 'country', type: 'text' },
        { code: 'region', type: 'link', options: { table: 'regions' } },
      ],
    });
    ids.orders = await made({
      code: 'orders',
      name: 'Orders',
      fields: [
        { code: 'amount', type: 'number' },
        { code: 'customer', type: 'link', options: { table: 'customers', inverse: { code: 'orders' } } },
        { code: 'helpers', type: 'link', options: { table: 'customers', multiple: true } },
      ],
    });
    for (const [table, data] of [
      ['regions', [{ id: 'asia', values: { name: 'Asia' } }, { id: 'eu', values: { name: 'Europe' } }]],
      [
        'customers',
        [
          { id: 'jp', values: { country: 'JP', region: 'asia' } },
          { id: 'jp2', values: { country: 'JP', region: 'asia' } },
          { id: 'us', values: { country: 'US' } },
          { id: 'fr', values: { country: 'FR', region: 'eu' } },
        ],
      ],
    ] as const) {
      const r = await t.post(`/api/tables/${table}/rows-bulk`, { data });
      assert.equal(r.status, 201, r.text);
    }
  });
  after(() => t.close());

  async function flow(filter: unknown, url: string, table = 'orders', events = ['create', 'update', 'delete']): Promise<string> {
    const r = await t.post('/api/flows', { name: 'linked', enabled: true, definition: { trigger: { table, events, filter }, webhook: { url } } });
    assert.equal(r.status, 201, r.text);
    return r.body.id;
  }

  async function write(method: 'post' | 'patch' | 'delete', path: string, body?: unknown): Promise<void> {
    const r = await t[method](path, body);
    assert.ok(r.status < 300, `${method} ${path}: ${r.text}`);
  }

  /** What a receiver got once the change of `marker` came, as `type rowId`. */
  async function got(rx: Receiver, marker: string): Promise<string[]> {
    await until(`the change of ${marker}`, () => rx.received.some((r) => r.body.change.rowId === marker), 10_000, () => JSON.stringify(rx.received.map((r) => r.body.change.rowId)));
    await sleep(300);
    return rx.received.map((r) => `${r.body.change.type} ${r.body.change.rowId}`);
  }

  async function deliveries(flowId: string): Promise<Record<string, any>[]> {
    const r = await t.get('/api/flow-deliveries', { query: { filter: { flowId: { eq: flowId } }, sorting: { sequence: 'asc' }, paging: { limit: 1000 } } });
    assert.equal(r.status, 200, r.text);
    return r.body.data;
  }

  async function disable(flowId: string): Promise<void> {
    const r = await t.put(`/api/flows/${flowId}`, { enabled: false });
    assert.equal(r.status, 200, r.text);
  }

  it('_some delivers the orders linked to a Japanese customer after the change, and not others; a delete passes', async () => {
    const rx = await new Receiver().start();
    try {
      const flowId = await flow({ values: { customer: { _some: JP } } }, rx.url());
      await write('post', '/api/tables/orders/rows', { id: 's1', values: { amount: 1, customer: 'jp' } }); // delivered
      await write('post', '/api/tables/orders/rows', { id: 's2', values: { amount: 2, customer: 'us' } }); // not
      await write('post', '/api/tables/orders/rows', { id: 's3', values: { amount: 3 } }); // not: no customer
      await write('patch', '/api/tables/orders/rows/s2', { values: { customer: 'jp2' } }); // delivered
      await write('patch', '/api/tables/orders/rows/s1', { values: { customer: 'fr' } }); // not: judged after the change
      // One planned batch of mixed rows: the linked rows asked of the database once for all of them.
      await write('post', '/api/tables/orders/rows-bulk', {
        data: [
          { id: 's4', values: { customer: 'us' } },
          { id: 's5', values: { customer: 'jp' } },
          { id: 's6', values: {} },
          { id: 's7', values: { customer: 'jp2' } },
        ],
      });
      await write('delete', '/api/tables/orders/rows/s3'); // delivered: a delete passes
      await write('post', '/api/tables/orders/rows', { id: 's9', values: { customer: 'jp' } });
      assert.deepEqual(await got(rx, 's9'), ['create s1', 'update s2', 'create s5', 'create s7', 'delete s3', 'create s9']);
      const list = await deliveries(flowId);
      assert.deepEqual(list.map((d) => d.status), Array(6).fill('succeeded'));
      await disable(flowId);
    } finally {
      await rx.stop();
    }
  });

  it('_none and _every judge a single and a multiple link (_every of none is true)', async () => {
    const none = await new Receiver().start();
    const every = await new Receiver().start();
    try {
      const noneFlow = await flow({ values: { customer: { _none: JP } } }, none.url(), 'orders', ['create']);
      const everyFlow = await flow({ values: { helpers: { _every: JP } } }, every.url(), 'orders', ['create']);
      await write('post', '/api/tables/orders/rows-bulk', {
        data: [
          { id: 'e1', values: { customer: 'jp', helpers: ['jp', 'jp2'] } },
          { id: 'e2', values: { customer: 'us', helpers: ['jp', 'us'] } },
          { id: 'e3', values: { helpers: [] } },
          { id: 'e4', values: { customer: 'jp2', helpers: ['fr'] } },
        ],
      });
      await write('post', '/api/tables/orders/rows', { id: 'e9', values: { customer: 'fr', helpers: ['jp'] } });
      assert.deepEqual(await got(none, 'e9'), ['create e2', 'create e3', 'create e9']);
      assert.deepEqual(await got(every, 'e9'), ['create e1', 'create e3', 'create e9']);
      for (const id of [noneFlow, everyFlow]) await disable(id);
    } finally {
      await none.stop();
      await every.stop();
    }
  });

  it('follows links nested two deep, under _or and _not', async () => {
    const rx = await new Receiver().start();
    try {
      const asia = { values: { customer: { _some: { values: { region: { _some: { values: { name: { _eq: 'Asia' } } } } } } } } };
      const flowId = await flow({ _or: [asia, { _not: { values: { amount: { _lt: 100 } } } }] }, rx.url(), 'orders', ['create']);
      await write('post', '/api/tables/orders/rows-bulk', {
        data: [
          { id: 'n1', values: { amount: 1, customer: 'jp' } }, // delivered: Asia
          { id: 'n2', values: { amount: 1, customer: 'fr' } }, // not: Europe
          { id: 'n3', values: { amount: 1, customer: 'us' } }, // not: no region
          { id: 'n4', values: { amount: 500, customer: 'us' } }, // delivered: the amount
        ],
      });
      await write('post', '/api/tables/orders/rows', { id: 'n9', values: { amount: 1, customer: 'jp2' } });
      assert.deepEqual(await got(rx, 'n9'), ['create n1', 'create n4', 'create n9']);
      await disable(flowId);
    } finally {
      await rx.stop();
    }
  });

  it('answers a bad filter inside a link 400 naming its path, on create and on update; nothing is written', async () => {
    const url = 'http://127.0.0.1:9/hook';
    const bad: [unknown, RegExp][] = [
      [{ values: { customer: { _some: { values: { nope: { _eq: 1 } } } } } }, /definition\.trigger\.filter\.values\.customer\._some\.values\.nope/],
      [{ values: { customer: { _none: { values: { country: { _eq: 5 } } } } } }, /definition\.trigger\.filter\.values\.customer\._none\.values\.country\._eq/],
      [{ values: { helpers: { _every: { values: { region: { _some: { values: { name: { _gt: [] } } } } } } } } }, /definition\.trigger\.filter\.values\.helpers\._every\.values\.region\._some\.values\.name\._gt/],
      [{ values: { customer: { _some: { values: { region: { _eq: 5 } } } } } }, /definition\.trigger\.filter\.values\.customer\._some\.values\.region\._eq/],
    ];
    const before = (await t.get('/api/flows', { query: { paging: { limit: 1000 } } })).body.data.length;
    for (const [filter, path] of bad) {
      const e = expectError(await t.post('/api/flows', { name: 'bad', definition: { trigger: { table: 'orders', events: ['create'], filter }, webhook: { url } } }), 400);
      assert.match(JSON.stringify(e), path);
    }
    assert.equal((await t.get('/api/flows', { query: { paging: { limit: 1000 } } })).body.data.length, before, 'no flow made');
    const good = { trigger: { table: 'orders', events: ['create'], filter: { values: { customer: { _some: JP } } } }, webhook: { url } };
    const made = await t.post('/api/flows', { name: 'good', definition: good });
    assert.equal(made.status, 201, made.text);
    for (const [filter, path] of bad) {
      const e = expectError(await t.put(`/api/flows/${made.body.id}`, { definition: { ...good, trigger: { ...good.trigger, filter } } }), 400);
      assert.match(JSON.stringify(e), path);
    }
    assert.deepEqual((await t.get(`/api/flows/${made.body.id}`)).body.definition.trigger.filter, good.trigger.filter, 'unchanged');
    assert.equal((await t.delete(`/api/flows/${made.body.id}`)).status, 200);
  });

  it('needs rows:read on each table a _some, _none or _every reaches, for a limited key: 403 naming scope and table, nothing written', async () => {
    const url = 'http://127.0.0.1:9/hook';
    const definition = (filter: unknown) => ({ trigger: { table: 'orders', events: ['create'], filter }, webhook: { url } });
    const throughRegions = { values: { customer: { _some: { values: { region: { _some: { values: { name: { _eq: 'Asia' } } } } } } } } };
    const flowsOnly = await makeKey(t, ['flows:read', 'flows:write'], [ids.orders]);
    const readsCustomers = await makeKey(t, ['flows:read', 'flows:write', 'rows:read'], [ids.orders, ids.customers]);
    const count = async () => (await t.get('/api/flows', { query: { paging: { limit: 1000 } } })).body.data.length;
    const before = await count();

    for (const filter of [{ values: { customer: { _some: JP } } }, { values: { customer: { _none: JP } } }, { values: { helpers: { _every: JP } } }, { _not: { values: { customer: { _some: JP } } } }]) {
      const e = expectError(await t.post('/api/flows', { name: 'refused', definition: definition(filter) }, { key: flowsOnly }), 403);
      assert.equal(e.message, 'this key lacks rows:read on table customers', JSON.stringify(filter));
    }
    const e = expectError(await t.post('/api/flows', { name: 'refused', enabled: true, definition: definition(throughRegions) }, { key: readsCustomers }), 403);
    assert.equal(e.message, 'this key lacks rows:read on table regions');
    assert.equal(await count(), before, 'nothing written');

    // What reads only the row's own link value needs nothing more; what the key may read is allowed.
    const own = await t.post('/api/flows', { name: 'own', definition: definition({ values: { customer: { _has: 'jp' } } }) }, { key: flowsOnly });
    assert.equal(own.status, 201, own.text);
    const allowed = await t.post('/api/flows', { name: 'allowed', definition: definition({ values: { customer: { _some: JP } } }) }, { key: readsCustomers });
    assert.equal(allowed.status, 201, allowed.text);

    // Updating to such a filter, or changing a flow that has one (enabling it), is refused alike.
    const up = expectError(await t.put(`/api/flows/${own.body.id}`, { definition: definition({ values: { customer: { _some: JP } } }) }, { key: flowsOnly }), 403);
    assert.equal(up.message, 'this key lacks rows:read on table customers');
    assert.deepEqual((await t.get(`/api/flows/${own.body.id}`)).body.definition.trigger.filter, { values: { customer: { _has: 'jp' } } }, 'unchanged');
    const enable = expectError(await t.put(`/api/flows/${allowed.body.id}`, { enabled: true }, { key: flowsOnly }), 403);
    assert.equal(enable.message, 'this key lacks rows:read on table customers');
    assert.equal((await t.get(`/api/flows/${allowed.body.id}`)).body.enabled, false, 'unchanged');
    const nested = expectError(await t.put(`/api/flows/${allowed.body.id}`, { definition: definition(throughRegions) }, { key: readsCustomers }), 403);
    assert.equal(nested.message, 'this key lacks rows:read on table regions');
    const renamed = await t.put(`/api/flows/${allowed.body.id}`, { name: 'renamed' }, { key: readsCustomers });
    assert.equal(renamed.status, 200, renamed.text);
    // A full key is not asked.
    assert.equal((await t.put(`/api/flows/${own.body.id}`, { definition: definition(throughRegions) })).status, 200);
    for (const id of [own.body.id, allowed.body.id]) assert.equal((await t.delete(`/api/flows/${id}`)).status, 200);
  });

  it('fails the deliveries, with why, once the filter no longer fits: a linked field removed, then the linked table deleted', async () => {
    const rx = await new Receiver().start();
    try {
      let r = await t.post('/api/tables', { code: 'shops', name: 'Shops', fields: [{ code: 'country', type: 'text' }] });
      assert.equal(r.status, 201, r.text);
      r = await t.post('/api/tables', { code: 'sales', name: 'Sales', fields: [{ code: 'shop', type: 'link', options: { table: 'shops', inverse: { code: 'sales' } } }] });
      assert.equal(r.status, 201, r.text);
      await write('post', '/api/tables/shops/rows', { id: 'tokyo', values: { country: 'JP' } });
      const flowId = await flow({ values: { shop: { _some: JP } } }, rx.url(), 'sales', ['create']);
      await write('post', '/api/tables/sales/rows', { id: 'x1', values: { shop: 'tokyo' } });
      await until('the first delivered', () => rx.received.length === 1);

      // The shops' country removed: the inner filter no longer fits.
      const shops = (await t.get('/api/tables/shops')).body;
      r = await t.put('/api/tables/shops', { fields: shops.fields.filter((f: { code: string }) => f.code !== 'country').map((f: { id: string }) => ({ id: f.id })) });
      assert.equal(r.status, 200, r.text);
      await write('post', '/api/tables/sales/rows', { id: 'x2', values: { shop: 'tokyo' } });
      const second = await until('the second failed', async () => {
        const list = await deliveries(flowId);
        return list.length === 2 && list[1].status === 'failed' && list[1];
      });
      assert.match(second.lastError, /no longer fits.*values\.shop\._some\.values\.country/);

      // The shops table deleted: its pair's field on sales goes with it.
      assert.equal((await t.delete('/api/tables/shops')).status < 300, true);
      await write('post', '/api/tables/sales/rows', { id: 'x3', values: {} });
      const third = await until('the third failed', async () => {
        const list = await deliveries(flowId);
        return list.length === 3 && list[2].status === 'failed' && list[2];
      });
      assert.match(third.lastError, /no longer fits.*values\.shop/);
      await sleep(200);
      assert.deepEqual(rx.received.map((a) => a.body.change.rowId), ['x1'], 'nothing sent that could not be judged');
      await disable(flowId);
    } finally {
      await rx.stop();
    }
  });
});

eachDatabase('flows filtered through links: the linked rows as they are when the flow plans', (kind) => {
  let t: TestApp;
  before(async () => {
    // The worker is not started: the test plans by hand, after changing the linked row.
    t = await startApp(kind, FAST);
  });
  after(() => t.close());

  it('judges a change by its linked rows as they are when it is planned, not when it was written', async () => {
    let r = await t.post('/api/tables', { code: 'people', name: 'People', fields: [{ code: 'country', type: 'text' }] });
    assert.equal(r.status, 201, r.text);
    r = await t.post('/api/tables', { code: 'tickets', name: 'Tickets', fields: [{ code: 'owner', type: 'link', options: { table: 'people' } }] });
    assert.equal(r.status, 201, r.text);
    r = await t.post('/api/tables/people/rows-bulk', { data: [{ id: 'ann', values: { country: 'US' } }, { id: 'bo', values: { country: 'JP' } }] });
    assert.equal(r.status, 201, r.text);
    const made = await t.post('/api/flows', {
      name: 'planned',
      enabled: true,
      definition: { trigger: { table: 'tickets', events: ['create'], filter: { values: { owner: { _some: JP } } } }, webhook: { url: 'http://127.0.0.1:9/hook' } },
    });
    assert.equal(made.status, 201, made.text);
    // Written while Ann is in the US and Bo in Japan; then they swap before the flow plans.
    r = await t.post('/api/tables/tickets/rows-bulk', { data: [{ id: 'k1', values: { owner: 'ann' } }, { id: 'k2', values: { owner: 'bo' } }, { id: 'k3', values: {} }] });
    assert.equal(r.status, 201, r.text);
    for (const [id, country] of [['ann', 'JP'], ['bo', 'US']]) assert.equal((await t.patch(`/api/tables/people/rows/${id}`, { values: { country } })).status, 200);
    // The statements that judge linked rows (store/links/linked-matches.ts answers rh_there), counted.
    let judged = 0;
    const counting: KyselyPlugin = {
      transformQuery: (args) => args.node,
      transformResult: async (args) => {
        if (args.result.rows.some((row) => Object.hasOwn(row as object, 'rh_there'))) judged++;
        return args.result;
      },
    };
    const store = new DeliveryStore({ ...t.database, db: t.database.db.withPlugin(counting) }, new TableCatalog(t.database));
    assert.equal(await store.plan(made.body.id, new Date().toISOString()), 3, 'the three changes read in one batch');
    assert.equal(judged, 1, 'the linked rows of the batch judged by one statement, not one per change');
    const list = (await t.get('/api/flow-deliveries', { query: { filter: { flowId: { eq: made.body.id } } } })).body.data as Record<string, any>[];
    const sequences = list.map((d) => d.sequence);
    const feed = (await t.get('/api/tables/tickets/changes', { query: { after: '0' } })).body.data as Record<string, any>[];
    assert.deepEqual(feed.filter((c) => sequences.includes(c.sequence)).map((c) => c.rowId), ['k1']);
    assert.deepEqual(list.map((d) => d.status), ['pending']);
  });
});
