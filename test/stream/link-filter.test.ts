import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { TEST_KEY, eachDatabase, expectError } from '../support/harness.ts';
import { type ListeningApp, startListening } from '../support/listening.ts';
import { makeKey } from '../access/keys.ts';
import { type SseConnection, openSse } from './sse.ts';

/**
 * CONTRACT §14's `filter` is the rows grammar, §11's link operators included: a stream filtered by
 * `_some`, `_none` or `_every` keeps the changes whose row, before or after the change, links to
 * rows that meet the inner filter (as those rows are when the stream reads the change), nested
 * through links as a list's filter is; each kept change is the feed's. The tables such a filter
 * reaches need rows:read (§12), when the stream opens, when its URL is issued and opened, and while
 * it runs.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

eachDatabase('change stream filtered through links', (kind) => {
  let t: ListeningApp;
  const ids: Record<string, string> = {};

  before(async () => {
    t = await startListening(kind, {}, { stream: { heartbeatMs: 300 } });
    let r = await t.post('/api/tables', { code: 'customers', name: 'Customers', fields: [{ code: 'country', type: 'text' }] });
    assert.equal(r.status, 201, r.text);
    ids.customers = r.body.id;
    r = await t.post('/api/tables', {
      code: 'orders',
      name: 'Orders',
      fields: [
        { code: 'amount', type: 'number' },
        { code: 'customer', type: 'link', options: { table: 'customers', inverse: { code: 'orders' } } },
      ],
    });
    assert.equal(r.status, 201, r.text);
    ids.orders = r.body.id;
    r = await t.post('/api/tables/customers/rows-bulk', {
      data: [
        { id: 'jp', values: { country: 'JP' } },
        { id: 'jp2', values: { country: 'JP' } },
        { id: 'us', values: { country: 'US' } },
      ],
    });
    assert.equal(r.status, 201, r.text);
  });
  after(() => t.close());

  async function open(table: string, filter: unknown, key?: string): Promise<SseConnection> {
    const c = t.track(await openSse(`${t.base}/api/tables/${table}/changes/stream?filter=${encodeURIComponent(JSON.stringify(filter))}`, { 'x-api-key': key ?? TEST_KEY }));
    if (c.status !== 200) assert.fail(`${c.status}: ${await c.text}`);
    await c.until(() => c.comments.includes('open'), 2000, 'open');
    return c;
  }

  async function write(method: 'post' | 'patch' | 'delete', path: string, body?: unknown): Promise<void> {
    const r = await t[method](path, body);
    assert.ok(r.status < 300, `${method} ${path}: ${r.text}`);
  }

  /** The feed's changes of a table, all of them. */
  async function feed(table: string): Promise<Record<string, unknown>[]> {
    const r = await t.get(`/api/tables/${table}/changes?after=0&limit=1000`);
    assert.equal(r.status, 200, r.text);
    return r.body.data;
  }

  /** Waits for the change of `rowId` a marker write made, then answers what the stream kept, as `type rowId`. */
  async function kept(c: SseConnection, marker: string): Promise<string[]> {
    await c.until(() => c.changes().some((ch) => ch.rowId === marker), 3000, `the change of ${marker}`);
    return c.changes().map((ch) => `${ch.type} ${ch.rowId}`);
  }

  it('_some keeps the changes of rows linked, before or after, to a row meeting its filter; each the feed\'s', async () => {
    const c = await open('orders', { values: { customer: { _some: { values: { country: { _eq: 'JP' } } } } } });
    await write('post', '/api/tables/orders/rows', { id: 'o1', values: { amount: 1, customer: 'jp' } }); // kept: after
    await write('post', '/api/tables/orders/rows', { id: 'o2', values: { amount: 2, customer: 'us' } }); // dropped
    await write('patch', '/api/tables/orders/rows/o2', { values: { customer: 'jp2' } }); // kept: after
    await write('patch', '/api/tables/orders/rows/o1', { values: { customer: 'us' } }); // kept: before
    await write('patch', '/api/tables/orders/rows/o1', { values: { amount: 5 } }); // dropped: US before and after
    await write('post', '/api/tables/orders/rows', { id: 'o3', values: { amount: 3 } }); // dropped: no customer
    await write('post', '/api/tables/orders/rows-bulk', { data: [{ id: 'b1', values: { customer: 'jp' } }, { id: 'b2', values: { customer: 'us' } }] }); // b1 kept
    await write('delete', '/api/tables/orders/rows/o2'); // kept: before
    await write('delete', '/api/tables/orders/rows/o3'); // dropped
    await write('post', '/api/tables/orders/rows', { id: 'end', values: { customer: 'jp' } });
    assert.deepEqual(await kept(c, 'end'), ['create o1', 'update o2', 'update o1', 'create b1', 'delete o2', 'create end']);
    const all = await feed('orders');
    for (const ch of c.changes()) assert.deepEqual(ch, all.find((f) => f.sequence === ch.sequence));
    // The other side of the pair: customers whose orders include one of more than 4.
    const d = await open('customers', { values: { orders: { _some: { values: { amount: { _gt: 4 } } } } } });
    await write('patch', '/api/tables/orders/rows/b2', { values: { amount: 10 } }); // an order's change: none of the customers'
    await write('post', '/api/tables/orders/rows', { id: 'big', values: { amount: 50, customer: 'jp2' } }); // jp2's orders now hold it: kept
    await write('post', '/api/tables/orders/rows', { id: 'small', values: { amount: 1, customer: 'jp' } }); // jp's orders: b1, end, small: none above 4
    await write('patch', '/api/tables/orders/rows/o1', { values: { customer: 'jp' } }); // jp now holds o1 (5): kept
    await write('post', '/api/tables/customers/rows', { id: 'new', values: { country: 'FR' } });
    await write('patch', '/api/tables/orders/rows/b2', { values: { customer: 'new' } }); // b2 (10) moved from us to new: both kept
    // A write to both sides of the pair appends both rows' changes: their order between them is not the point here.
    assert.deepEqual((await kept(d, 'new')).sort(), ['update jp', 'update jp2', 'update new', 'update us', 'update us']);
    const sequences = d.changes().map((ch) => ch.sequence as number);
    assert.deepEqual(sequences, [...sequences].sort((a, b) => a - b), 'in order');
  });

  it('_none and _every: the complement, and every linked row (none linked: true); nested through two links', async () => {
    await write('post', '/api/tables/customers/rows', { id: 'de', values: { country: 'DE' } });
    const none = await open('orders', { values: { customer: { _none: { values: { country: { _eq: 'JP' } } } } } });
    const every = await open('customers', { values: { orders: { _every: { values: { amount: { _gte: 100 } } } } } });
    // Orders whose customer has some order above 40 (through the pair and back).
    const nested = await open('orders', { values: { customer: { _some: { values: { orders: { _some: { values: { amount: { _gt: 40 } } } } } } } } });
    await write('post', '/api/tables/orders/rows', { id: 'n1', values: { amount: 1, customer: 'us' } }); // none: kept; nested: us's orders none above 40; every: us had none before (true)
    await write('post', '/api/tables/orders/rows', { id: 'n2', values: { amount: 2, customer: 'jp' } }); // none: dropped; nested: jp's largest is 5; every: jp's are small
    await write('post', '/api/tables/orders/rows', { id: 'n3', values: { amount: 3 } }); // none: kept (no customer); nested: dropped
    await write('post', '/api/tables/orders/rows', { id: 'n4', values: { amount: 4, customer: 'jp2' } }); // none: dropped; nested: kept (jp2 holds big, 50)
    await write('post', '/api/tables/orders/rows', { id: 'n5', values: { amount: 500, customer: 'de' } }); // none: kept; every: de's orders all at least 100 after; nested: kept from here on
    await write('post', '/api/tables/orders/rows', { id: 'n6', values: { amount: 5, customer: 'de' } }); // every: de had them all before
    await write('post', '/api/tables/orders/rows', { id: 'stop', values: { amount: 1000, customer: 'de' } }); // every: not before (n6), not after
    assert.deepEqual(await kept(none, 'stop'), ['create n1', 'create n3', 'create n5', 'create n6', 'create stop']);
    await write('post', '/api/tables/customers/rows', { id: 'last', values: { country: 'IT' } }); // no orders: every holds
    assert.deepEqual(await kept(every, 'last'), ['update us', 'update de', 'update de', 'create last']);
    await write('post', '/api/tables/orders/rows', { id: 'mark', values: { amount: 1, customer: 'jp2' } });
    // n5, n6 and stop link de, whose orders hold n5 (500) from n5 on.
    assert.deepEqual(await kept(nested, 'mark'), ['create n4', 'create n5', 'create n6', 'create stop', 'create mark']);
  });

  it('a filter through links needs rows:read on the tables it reaches: to open, to issue and open a URL, and to go on', async () => {
    const filter = { values: { customer: { _some: { values: { country: { _eq: 'JP' } } } } } };
    const narrow = await makeKey(t, ['rows:read'], [ids.orders]);
    const refused = await openSse(`${t.base}/api/tables/orders/changes/stream?filter=${encodeURIComponent(JSON.stringify(filter))}`, { 'x-api-key': narrow });
    assert.equal(refused.status, 403);
    assert.match(JSON.parse(await refused.text).message, /lacks rows:read on table customers/);
    assert.match(String(expectError(await t.post('/api/tables/orders/changes/stream-url', { filter }, { key: narrow }), 403).message), /lacks rows:read on table customers/);
    // `_has` reads nothing of the other table: allowed.
    await open('orders', { values: { customer: { _has: 'jp' } } }, narrow);

    const wide = await makeKey(t, ['rows:read'], [ids.orders, ids.customers]);
    const keyId = (await t.get('/api/api-keys/me', { key: wide })).body.id as string;
    const issued = await t.post('/api/tables/orders/changes/stream-url', { filter }, { key: wide });
    assert.equal(issued.status, 200, issued.text);
    const url = new URL(issued.body.url);
    const signed = t.track(await openSse(`${t.base}${url.pathname}${url.search}`));
    assert.equal(signed.status, 200);
    const c = await open('orders', filter, wide);
    const plain = await open('orders', { values: { amount: { _gt: 0 } } }, wide);
    await write('post', '/api/tables/orders/rows', { id: 'k1', values: { amount: 1, customer: 'jp' } });
    await c.until(() => c.changes().some((ch) => ch.rowId === 'k1'), 3000, 'k1');
    await signed.until(() => signed.changes().some((ch) => ch.rowId === 'k1'), 3000, 'k1 on the signed URL');
    // Narrowed to orders: the streams through customers end within a second; the plain one goes on.
    assert.equal((await t.put(`/api/api-keys/${keyId}`, { tables: [ids.orders] })).status, 200);
    const at = Date.now();
    await Promise.race([Promise.all([c.ended, signed.ended]), sleep(1500)]);
    for (const s of [c, signed]) assert.ok(s.endedAt !== undefined && s.endedAt - at <= 1000, `ended ${s.endedAt === undefined ? 'never' : `${s.endedAt - at} ms after`}`);
    assert.equal(plain.endedAt, undefined);
    assert.equal((await openSse(`${t.base}${url.pathname}${url.search}`)).status, 403);
  });

  it('a row leaving the filter through a linked row gone or changed since: its delete or update is kept (cascade, unlink, a customer that moved)', async () => {
    let r = await t.post('/api/tables', { code: 'buyers', name: 'Buyers', fields: [{ code: 'country', type: 'text' }] });
    assert.equal(r.status, 201, r.text);
    r = await t.post('/api/tables', {
      code: 'baskets',
      name: 'Baskets',
      fields: [
        { code: 'n', type: 'number' },
        { code: 'buyer', type: 'link', options: { table: 'buyers', onDelete: 'cascade' } },
        { code: 'payer', type: 'link', options: { table: 'buyers' } },
      ],
    });
    assert.equal(r.status, 201, r.text);
    const buyers = ['cascade', 'unlink', 'moved', 'other', 'last'].map((id) => ({ id, values: { country: id === 'other' ? 'US' : 'JP' } }));
    assert.equal((await t.post('/api/tables/buyers/rows-bulk', { data: buyers })).status, 201);
    const jp = { values: { country: { _eq: 'JP' } } };
    const c = await open('baskets', { _or: [{ values: { buyer: { _some: jp } } }, { values: { payer: { _some: jp } } }] });
    await write('post', '/api/tables/baskets/rows-bulk', {
      data: [
        { id: 'x1', values: { buyer: 'cascade' } },
        { id: 'x2', values: { buyer: 'cascade' } },
        { id: 'u1', values: { payer: 'unlink' } },
        { id: 'm1', values: { payer: 'moved' } },
        { id: 'o1', values: { payer: 'other' } },
      ],
    }); // all but o1 kept
    // Judged as their buyers are when the stream reads them: the four are read before anything moves.
    await c.until(() => c.changes().length >= 4, 3000, 'the four creates');
    await write('delete', '/api/tables/buyers/rows/cascade'); // x1 and x2 deleted with it: kept, their buyer gone
    await write('delete', '/api/tables/buyers/rows/unlink'); // u1's payer unlinked: kept, its payer gone
    await write('patch', '/api/tables/buyers/rows/moved', { values: { country: 'US' } }); // no change of a basket
    await write('delete', '/api/tables/baskets/rows/m1'); // kept: it may have matched when its payer was in Japan
    await write('patch', '/api/tables/baskets/rows/o1', { values: { n: 1 } }); // dropped: its payer is known, and in the US
    await write('delete', '/api/tables/baskets/rows/o1'); // kept: a deleted row's past links cannot be told
    await write('post', '/api/tables/baskets/rows', { id: 'end', values: { buyer: 'last' } });
    const got = await kept(c, 'end');
    assert.deepEqual(got.slice(0, 4).sort(), ['create m1', 'create u1', 'create x1', 'create x2']);
    assert.deepEqual(got.slice(4).sort(), ['delete m1', 'delete o1', 'delete x1', 'delete x2', 'update u1', 'create end'].sort());
    const sequences = c.changes().map((ch) => ch.sequence as number);
    assert.deepEqual(sequences, [...sequences].sort((a, b) => a - b), 'in order');
  });

  it('a changed row linking 1,500 rows: the one that meets the filter found among them', async () => {
    await write('post', '/api/tables/customers/rows-bulk', { data: [{ id: 'many', values: { country: 'FR' } }, { id: 'many2', values: { country: 'FR' } }] });
    for (const owner of ['many', 'many2']) {
      for (let part = 0; part < 2; part++) {
        const data = Array.from({ length: 750 }, (_, i) => ({ id: `${owner}-${part * 750 + i}`, values: { amount: owner === 'many' && part * 750 + i === 1400 ? 7777 : 1, customer: owner } }));
        await write('post', '/api/tables/orders/rows-bulk', { data });
      }
    }
    const c = await open('customers', { values: { orders: { _some: { values: { amount: { _eq: 7777 } } } } } });
    await write('patch', '/api/tables/customers/rows/many2', { values: { country: 'DE' } }); // dropped: none of its 1,500 orders is 7,777
    await write('patch', '/api/tables/customers/rows/many', { values: { country: 'DE' } }); // kept: its 1,401st is
    await write('post', '/api/tables/orders/rows', { id: 'late', values: { amount: 7777, customer: 'many2' } }); // many2's orders now hold one: kept
    assert.deepEqual(await kept(c, 'many2'), ['update many', 'update many2']);
  });

  it('a field its filter reads through the link removed: that stream ends alone, the table\'s other streams go on', async () => {
    let r = await t.post('/api/tables', { code: 'shops', name: 'Shops', fields: [{ code: 'note', type: 'text' }, { code: 'name', type: 'text' }] });
    assert.equal(r.status, 201, r.text);
    r = await t.post('/api/tables', { code: 'items', name: 'Items', fields: [{ code: 'n', type: 'number' }, { code: 'shop', type: 'link', options: { table: 'shops' } }] });
    assert.equal(r.status, 201, r.text);
    assert.equal((await t.post('/api/tables/shops/rows', { id: 's1', values: { note: 'n' } })).status, 201);
    const through = { values: { shop: { _some: { values: { note: { _eq: 'n' } } } } } };
    const linked = await open('items', through);
    const plain = await open('items', { values: { n: { _gt: 0 } } });
    const all = t.track(await openSse(`${t.base}/api/tables/items/changes/stream`, { 'x-api-key': TEST_KEY }));
    await all.until(() => all.comments.includes('open'), 2000, 'open');
    await write('post', '/api/tables/items/rows', { id: 'i1', values: { n: 1, shop: 's1' } });
    await linked.until(() => linked.changes().length === 1, 3000, 'i1 through the link');
    const shops = (await t.get('/api/tables/shops')).body;
    assert.equal((await t.put('/api/tables/shops', { fields: shops.fields.filter((f: { code: string }) => f.code !== 'note') })).status, 200);
    await write('post', '/api/tables/items/rows', { id: 'i2', values: { n: 2, shop: 's1' } });
    await write('post', '/api/tables/items/rows', { id: 'i3', values: { n: 3 } });
    for (const c of [plain, all]) await c.until(() => c.changes().some((ch) => ch.rowId === 'i3'), 3000, 'i3');
    await Promise.race([linked.ended, sleep(3000)]);
    assert.notEqual(linked.endedAt, undefined, 'the stream whose filter no longer fits ended');
    assert.equal(plain.endedAt, undefined);
    assert.equal(all.endedAt, undefined);
    assert.deepEqual(all.changes().map((ch) => ch.rowId), ['i1', 'i2', 'i3']);
    // Its reconnect hears why.
    const again = await openSse(`${t.base}/api/tables/items/changes/stream?filter=${encodeURIComponent(JSON.stringify(through))}`, { 'x-api-key': TEST_KEY });
    assert.equal(again.status, 400);
    assert.match(await again.text, /filter\.values\.shop\._some\.values\.note/);
  });

  it('bad filters through links: 400 naming the place, as a list\'s', async () => {
    const bad = async (filter: unknown, path: string) => {
      const c = await openSse(`${t.base}/api/tables/orders/changes/stream?filter=${encodeURIComponent(JSON.stringify(filter))}`, { 'x-api-key': TEST_KEY });
      assert.equal(c.status, 400, JSON.stringify(filter));
      const body = JSON.parse(await c.text);
      assert.deepEqual(body.details.map((d: { path: string }) => d.path), [path], JSON.stringify(body));
    };
    await bad({ values: { customer: { _some: { values: { nope: { _eq: 1 } } } } } }, 'filter.values.customer._some.values.nope');
    await bad({ values: { customer: { _some: { values: { orders: { _some: { values: { customer: { _some: { values: { orders: { _some: {} } } } } } } } } } } } }, 'filter.values.customer._some.values.orders._some.values.customer._some.values.orders._some');
    const body = expectError(await t.post('/api/tables/orders/changes/stream-url', { filter: { values: { customer: { _every: { values: { country: { _eq: 1 } } } } } } }), 400);
    assert.deepEqual((body.details as { path: string }[]).map((d) => d.path), ['filter.values.customer._every.values.country._eq']);
  });
});
