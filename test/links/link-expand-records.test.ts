import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { TEST_KEY, type TestApp, eachDatabase, startApp } from '../support/harness.ts';

/**
 * Expanded rows are answered as their own records (CONTRACT §11), byte for byte as a get of the row
 * answers them, whichever way they are read: as their record's text rendered by the database (a
 * table whose fields it writes exactly: on SQLite texts, dates, times, booleans, lists, records,
 * links; on PostgreSQL texts, dates, times, date-times, booleans, links) or as columns rendered by
 * the service (numbers, files; lists and records on PostgreSQL). Each is rendered once per answer,
 * however many rows link to it.
 */
eachDatabase('links: expanded records', (kind) => {
  let t: TestApp;
  const awkward = "quote \" apostrophe ' backslash \\ newline \n tab \t \u0001 \u001f \u007f \u2028 😀 東京 </script>";

  before(async () => {
    t = await startApp(kind);
    const created = [
      await t.post('/api/tables', {
        code: 'people',
        name: 'People',
        fields: [
          { code: 'name', type: 'text' },
          { code: 'since', type: 'dateTime' },
          { code: 'born', type: 'date' },
          { code: 'vip', type: 'boolean' },
          { code: 'tags', type: 'list' },
          { code: 'meta', type: 'record' },
        ],
      }),
      await t.post('/api/tables', { code: 'products', name: 'Products', fields: [{ code: 'label', type: 'text' }, { code: 'price', type: 'number' }] }),
      await t.post('/api/tables', {
        code: 'deals',
        name: 'Deals',
        fields: [
          { code: 'no', type: 'number', options: { indexed: true } },
          { code: 'person', type: 'link', options: { table: 'people', inverse: { code: 'deals' } } },
          { code: 'products', type: 'link', options: { table: 'products', multiple: true, inverse: { code: 'deals', multiple: true } } },
        ],
      }),
    ];
    for (const c of created) assert.equal(c.status, 201, c.text);
    const people = await t.post('/api/tables/people/rows-bulk', {
      data: [
        { id: 'p1', values: { name: awkward, since: '2024-05-01T09:30:00+09:00', born: '1990-02-28', vip: true, tags: ['a', 2, false, null, { x: '\u0001' }], meta: { 'k"ey': [1.5, 'two'], n: 1e21 } } },
        { id: 'p2', values: { name: 'Nobody linked', vip: false } },
        { id: 'p3', values: {} },
      ],
    });
    assert.equal(people.status, 201, people.text);
    const products = await t.post('/api/tables/products/rows-bulk', { data: [{ id: 'x1', values: { label: 'Whole', price: 2 } }, { id: 'x2', values: { label: awkward, price: 0.1 + 0.2 } }] });
    assert.equal(products.status, 201, products.text);
    // Several deals of one person and one product on a page; one deal linking nobody; one whose person goes.
    const deals = await t.post('/api/tables/deals/rows-bulk', {
      data: [
        { id: 'd1', values: { no: 1, person: 'p1', products: ['x1', 'x2'] } },
        { id: 'd2', values: { no: 2, person: 'p1', products: ['x2'] } },
        { id: 'd3', values: { no: 3 } },
        { id: 'd4', values: { no: 4, person: 'p1', products: ['x1'] } },
        { id: 'd5', values: { no: 5, person: 'p3' } },
      ],
    });
    assert.equal(deals.status, 201, deals.text);
    assert.equal((await t.delete('/api/tables/people/rows/p3')).status, 204);
  });
  after(() => t.close());

  /** The exact text a get of the row answers. */
  async function gotText(table: string, id: string): Promise<string> {
    const res = await t.get(`/api/tables/${table}/rows/${id}`);
    assert.equal(res.status, 200, res.text);
    return res.text;
  }

  it('a page whose rows share linked rows answers each as its get does, byte for byte, escapes and numbers included', async () => {
    const page = await t.get('/api/tables/deals/rows', { query: { expand: 'person,products', sort: JSON.stringify([{ no: { direction: 'asc', nulls: 'nullsLast' } }]) } });
    assert.equal(page.status, 200, page.text);
    const [p1, x1, x2] = [await gotText('people', 'p1'), await gotText('products', 'x1'), await gotText('products', 'x2')];
    // The record texts themselves, in place: `2` stays 2 (not 2.0), 0.1 + 0.2 keeps its digits, the text its escapes.
    const expected = [
      `"person":${p1},"products":[${x1},${x2}]`,
      `"person":${p1},"products":[${x2}]`,
      `"person":null,"products":[]`,
      `"person":${p1},"products":[${x1}]`,
      `"person":null,"products":[]`,
    ];
    const data = page.body.data as { id: string; values: Record<string, unknown> }[];
    assert.deepEqual(data.map((d) => d.id), ['d1', 'd2', 'd3', 'd4', 'd5']);
    let at = 0;
    for (const [i, text] of expected.entries()) {
      const found = page.text.indexOf(text, at);
      assert.ok(found > at, `deal ${data[i].id}: ${text.slice(0, 120)}… in ${page.text.slice(at, at + 400)}`);
      at = found + text.length;
    }
    // The person's own links stay ids: all its deals, in link order.
    assert.deepEqual((data[0].values.person as { values: { deals: string[] } }).values.deals, ['d1', 'd2', 'd4']);
    assert.equal(JSON.parse(p1).values.name, awkward);
  });

  it('a linked row with no links of its own answers its empty inverse; a get of one row expands as a page does', async () => {
    const linked = await t.post('/api/tables/deals/rows', { id: 'd6', values: { no: 6, person: 'p2' } }, { query: { expand: 'person' } });
    assert.equal(linked.status, 201, linked.text);
    assert.deepEqual(linked.body.values.person.values, { name: 'Nobody linked', since: null, born: null, vip: false, tags: null, meta: null, deals: ['d6'] });
    const unlinked = await t.patch('/api/tables/deals/rows/d6', { values: { person: null } }, { query: { expand: 'person' } });
    assert.equal(unlinked.status, 200, unlinked.text);
    assert.equal(unlinked.body.values.person, null);
    const p2 = await gotText('people', 'p2');
    assert.deepEqual(JSON.parse(p2).values.deals, []);
    const one = await t.get('/api/tables/deals/rows/d1', { query: { expand: 'person' } });
    assert.ok(one.text.includes(`"person":${await gotText('people', 'p1')}`), one.text);
  });

  it('a linked table of only texts, choices, times, dates, booleans and links (rendered by either database) answers as its gets do, a self-link included', async () => {
    const made = await t.post('/api/tables', {
      code: 'contacts',
      name: 'Contacts',
      fields: [
        { code: 'name', type: 'text' },
        { code: 'kind', type: 'select', options: { choices: ['lead', 'client'] } },
        { code: 'seen', type: 'dateTime' },
        { code: 'born', type: 'date' },
        { code: 'calls', type: 'time' },
        { code: 'month', type: 'yearMonth' },
        { code: 'active', type: 'boolean' },
        { code: 'boss', type: 'link', options: { table: 'contacts', inverse: { code: 'reports', multiple: true } } },
      ],
    });
    assert.equal(made.status, 201, made.text);
    const tickets = await t.post('/api/tables', {
      code: 'tickets',
      name: 'Tickets',
      fields: [
        { code: 'no', type: 'number', options: { indexed: true } },
        { code: 'owner', type: 'link', options: { table: 'contacts' } },
        { code: 'people', type: 'link', options: { table: 'contacts', multiple: true, inverse: { code: 'tickets', multiple: true } } },
      ],
    });
    assert.equal(tickets.status, 201, tickets.text);
    const contacts = await t.post('/api/tables/contacts/rows-bulk', {
      data: [
        { id: 'c1', values: { name: awkward, kind: 'client', seen: '0001-01-01T00:00:00Z', born: '0001-01-01', calls: '00:00:00', month: '2024-02', active: true } },
        { id: 'c2', values: { name: 'Second', kind: 'lead', seen: '9999-12-31T23:59:59.999+00:00', born: '9999-12-31', calls: '23:59:59', month: '9999-12', active: false, boss: 'c1' } },
        { id: 'c3', values: { seen: '2024-05-01T09:30:00.5+09:00', boss: 'c3' } },
        { id: 'c4', values: { name: 'Goes away' } },
      ],
    });
    assert.equal(contacts.status, 201, contacts.text);
    const rows = await t.post('/api/tables/tickets/rows-bulk', {
      data: [
        { id: 't1', values: { no: 1, owner: 'c1', people: ['c2', 'c1', 'c3'] } },
        { id: 't2', values: { no: 2, owner: 'c2', people: ['c4', 'c2'] } },
        { id: 't3', values: { no: 3 } },
        { id: 't4', values: { no: 4, owner: 'c4', people: ['c4'] } },
      ],
    });
    assert.equal(rows.status, 201, rows.text);
    assert.equal((await t.delete('/api/tables/contacts/rows/c4')).status, 204);
    const [c1, c2, c3] = [await gotText('contacts', 'c1'), await gotText('contacts', 'c2'), await gotText('contacts', 'c3')];
    assert.equal(JSON.parse(c2).values.seen, '9999-12-31T23:59:59.999Z');
    assert.equal(JSON.parse(c3).values.seen, '2024-05-01T00:30:00.500Z');
    const page = await t.get('/api/tables/tickets/rows', { query: { expand: 'owner,people', sort: JSON.stringify([{ no: { direction: 'asc', nulls: 'nullsLast' } }]) } });
    assert.equal(page.status, 200, page.text);
    const expected = [`"owner":${c1},"people":[${c2},${c1},${c3}]`, `"owner":${c2},"people":[${c2}]`, `"owner":null,"people":[]`, `"owner":null,"people":[]`];
    let at = 0;
    for (const text of expected) {
      const found = page.text.indexOf(text, at);
      assert.ok(found > at, `${text.slice(0, 160)}… in ${page.text.slice(at, at + 600)}`);
      at = found + text.length;
    }
    // The self-link: a contact expanded from its own table, its boss and reports as ids.
    const self = await t.get('/api/tables/contacts/rows/c2', { query: { expand: 'boss,reports' } });
    assert.equal(self.status, 200, self.text);
    assert.ok(self.text.includes(`"boss":${c1}`), self.text);
    const c3self = await t.get('/api/tables/contacts/rows/c3', { query: { expand: 'boss,reports' } });
    assert.ok(c3self.text.includes(`"boss":${c3}`) && c3self.text.includes(`"reports":[${c3}]`), c3self.text);
    // A write's and a batch's answers carry the same texts.
    const written = await t.post('/api/tables/tickets/rows', { id: 't5', values: { no: 5, owner: 'c3', people: ['c1'] } }, { query: { expand: 'owner,people' } });
    assert.equal(written.status, 201, written.text);
    const c3now = await gotText('contacts', 'c3');
    const c1now = await gotText('contacts', 'c1');
    assert.ok(written.text.includes(`"owner":${c3now},"people":[${c1now}]`), written.text);
    const batch = await t.post('/api/rows-batch', { operations: [{ type: 'update', tableId: tickets.body.id, id: 't3', values: { owner: 'c2' } }] }, { query: { expand: 'owner' } });
    assert.equal(batch.status, 200, batch.text);
    assert.ok(batch.text.includes(`"owner":${await gotText('contacts', 'c2')}`), batch.text);
  });

  it('each answer reads its linked rows afresh: a linked row changed, unlinked or deleted between two pages (or two asks of one page) answers as its get does then', async () => {
    for (const c of [
      await t.post('/api/tables', { code: 'shops', name: 'Shops', fields: [{ code: 'title', type: 'text' }, { code: 'opened', type: 'date' }] }),
      await t.post('/api/tables', { code: 'items', name: 'Items', fields: [{ code: 'label', type: 'text' }, { code: 'price', type: 'number' }] }),
    ]) assert.equal(c.status, 201, c.text);
    const sales = await t.post('/api/tables', {
      code: 'sales',
      name: 'Sales',
      fields: [
        { code: 'no', type: 'number', options: { indexed: true } },
        { code: 'shop', type: 'link', options: { table: 'shops', inverse: { code: 'sales', multiple: true } } },
        { code: 'items', type: 'link', options: { table: 'items', multiple: true, inverse: { code: 'sales', multiple: true } } },
      ],
    });
    assert.equal(sales.status, 201, sales.text);
    assert.equal((await t.post('/api/tables/shops/rows-bulk', { data: [{ id: 's1', values: { title: 'First', opened: '2020-01-31' } }, { id: 's2', values: { title: awkward } }] })).status, 201);
    assert.equal((await t.post('/api/tables/items/rows-bulk', { data: [{ id: 'i1', values: { label: 'One', price: 2 } }, { id: 'i2', values: { label: 'Two', price: 0.5 } }] })).status, 201);
    const made = await t.post('/api/tables/sales/rows-bulk', {
      data: [
        { id: 'v1', values: { no: 1, shop: 's1', items: ['i1', 'i2'] } },
        { id: 'v2', values: { no: 2, shop: 's2', items: ['i2'] } },
        { id: 'v3', values: { no: 3, shop: 's1', items: ['i2', 'i1'] } },
        { id: 'v4', values: { no: 4, shop: 's2', items: [] } },
      ],
    });
    assert.equal(made.status, 201, made.text);
    const query = { expand: 'shop,items', pageSize: '2', sort: JSON.stringify([{ no: { direction: 'asc', nulls: 'nullsLast' } }]) };
    /** The page's records, each linked value held to the text a get of the linked row answers now. */
    async function check(text: string, rows: { shop: string | null; items: string[] }[]): Promise<void> {
      let at = 0;
      for (const r of rows) {
        const shop = r.shop === null ? 'null' : await gotText('shops', r.shop);
        const items = await Promise.all(r.items.map((id) => gotText('items', id)));
        const expected = `"shop":${shop},"items":[${items.join(',')}]`;
        const found = text.indexOf(expected, at);
        assert.ok(found >= at, `${expected.slice(0, 200)}… in ${text.slice(at, at + 600)}`);
        at = found + expected.length;
      }
    }
    const first = await t.get('/api/tables/sales/rows', { query });
    assert.equal(first.status, 200, first.text);
    await check(first.text, [{ shop: 's1', items: ['i1', 'i2'] }, { shop: 's2', items: ['i2'] }]);
    // Between the pages: s1 renamed, i1's price changed, i2 deleted (unlinked from every sale), v4 given s1.
    assert.equal((await t.patch('/api/tables/shops/rows/s1', { values: { title: 'Renamed "s1"', opened: null } })).status, 200);
    assert.equal((await t.patch('/api/tables/items/rows/i1', { values: { price: 1e21 } })).status, 200);
    assert.equal((await t.delete('/api/tables/items/rows/i2')).status, 204);
    assert.equal((await t.patch('/api/tables/sales/rows/v4', { values: { shop: 's1' } })).status, 200);
    const next = await t.get(new URL(first.body.nextUrl as string).pathname + new URL(first.body.nextUrl as string).search);
    assert.equal(next.status, 200, next.text);
    assert.deepEqual((next.body.data as { id: string }[]).map((d) => d.id), ['v3', 'v4']);
    await check(next.text, [{ shop: 's1', items: ['i1'] }, { shop: 's1', items: [] }]);
    assert.equal(next.body.data[0].values.shop.values.title, 'Renamed "s1"');
    assert.deepEqual(next.body.data[0].values.shop.values.sales, ['v1', 'v3', 'v4']);
    // The first page asked again: the same rows, their linked records as they are now.
    const again = await t.get('/api/tables/sales/rows', { query });
    assert.equal(again.status, 200, again.text);
    await check(again.text, [{ shop: 's1', items: ['i1'] }, { shop: 's2', items: [] }]);
    assert.notEqual(again.text, first.text);
  });

  it('jsonl exports carry the same records', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/api/tables/deals/rows-export?${new URLSearchParams({ format: 'jsonl', encoding: 'utf8', newline: 'lf', expand: 'person,products' })}`, headers: { 'x-api-key': TEST_KEY } });
    assert.equal(res.statusCode, 200, res.body);
    const lines = res.body.trim().split('\n').map((l) => JSON.parse(l));
    const d1 = lines.find((l) => l.id === 'd1');
    assert.deepEqual(d1.values.person, JSON.parse(await gotText('people', 'p1')));
    assert.deepEqual(d1.values.products, [JSON.parse(await gotText('products', 'x1')), JSON.parse(await gotText('products', 'x2'))]);
    assert.equal(lines.find((l) => l.id === 'd3').values.person, null);
  });
});
