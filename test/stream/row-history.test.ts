import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';

/**
 * Issue 31 item 2, CONTRACT §14: GET /api/tables/{t}/rows/{rowId}/history?pageSize&cursor: the
 * row's changes, newest first, the feed's change objects, paged with a signed cursor (nextUrl and
 * Link as for lists), one row's only, kept after the row's deletion, and 404 for a row with none kept.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Change = Record<string, any>;

eachDatabase('row history', (kind) => {
  let t: TestApp;
  const history = (row: string, query = '', table = 'hist') => t.get(`/api/tables/${table}/rows/${encodeURIComponent(row)}/history${query}`);
  const local = (url: string) => url.replace(/^https?:\/\/[^/]+/, '');

  before(async () => {
    t = await startApp(kind);
    const r = await t.post('/api/tables', { code: 'hist', name: 'History', fields: [{ code: 'title', type: 'text' }, { code: 'n', type: 'number' }] });
    assert.equal(r.status, 201, r.text);
  });
  after(() => t.close());

  it('lists the create, the updates and the delete newest first, the feed\'s changes, one row\'s only, after the row\'s deletion too', async () => {
    assert.equal((await t.post('/api/tables/hist/rows', { id: 'r1', values: { title: 'one', n: 1 } })).status, 201);
    assert.equal((await t.post('/api/tables/hist/rows', { id: 'other', values: { title: 'other' } })).status, 201);
    for (const n of [2, 3, 4]) {
      assert.equal((await t.patch('/api/tables/hist/rows/r1', { values: { n } })).status, 200);
      assert.equal((await t.patch('/api/tables/hist/rows/other', { values: { n } })).status, 200);
    }
    const live = await history('r1');
    assert.equal(live.status, 200, live.text);
    assert.deepEqual(live.body.data.map((c: Change) => c.type), ['update', 'update', 'update', 'create']);
    assert.deepEqual(live.body.data.map((c: Change) => c.row.values.n), [4, 3, 2, 1]);
    assert.equal(live.body.nextUrl, null);
    assert.equal(live.headers.link, undefined);

    assert.equal((await t.delete('/api/tables/hist/rows/r1')).status, 204);
    const r = await history('r1');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.data.map((c: Change) => c.type), ['delete', 'update', 'update', 'update', 'create']);
    assert.ok(r.body.data.every((c: Change) => c.rowId === 'r1'));
    const feed = (await t.get('/api/tables/hist/changes?after=0&limit=1000')).body.data as Change[];
    assert.deepEqual(r.body.data, feed.filter((c) => c.rowId === 'r1').reverse(), 'the feed\'s changes of the row, newest first');
  });

  it('pages with pageSize and a signed cursor in nextUrl and Link; the last page has nextUrl null', async () => {
    assert.equal((await t.post('/api/tables/hist/rows', { id: 'paged', values: { n: 0 } })).status, 201);
    for (let n = 1; n <= 6; n++) assert.equal((await t.patch('/api/tables/hist/rows/paged', { values: { n } })).status, 200);
    const seen: number[] = [];
    let url: string | null = '/api/tables/hist/rows/paged/history?pageSize=3';
    let pages = 0;
    while (url) {
      const r = await t.get(url);
      assert.equal(r.status, 200, r.text);
      pages++;
      seen.push(...r.body.data.map((c: Change) => c.row.values.n));
      if (r.body.nextUrl) {
        assert.match(r.body.nextUrl, /^http:\/\/rowhouse\.test\/api\/tables\/hist\/rows\/paged\/history\?pageSize=3&cursor=/);
        assert.equal(r.headers.link, `<${r.body.nextUrl}>; rel="next"`);
      } else assert.equal(r.headers.link, undefined);
      url = r.body.nextUrl && local(r.body.nextUrl);
    }
    assert.deepEqual(seen, [6, 5, 4, 3, 2, 1, 0]);
    assert.equal(pages, 3);
    // Exactly a page's worth: no empty page after it.
    const two = await history('paged', '?pageSize=7');
    assert.equal(two.body.data.length, 7);
    assert.equal(two.body.nextUrl, null);
    const first = await history('paged', '?pageSize=1');
    assert.equal(first.body.data[0].row.values.n, 6);
    assert.ok(first.body.nextUrl);
  });

  it('unknown row or one whose changes retention deleted → 404; unknown table → 404', async () => {
    expectError(await history('never'), 404);
    // An id no row can have, NUL included (PostgreSQL refuses text with NUL): 404, not a 500.
    expectError(await history('a\u0000b'), 404);
    expectError(await history('bad id/../x'), 404);
    expectError(await history('r1', '', 'nowhere'), 404);
    assert.equal((await t.post('/api/tables/hist/rows', { id: 'old', values: { n: 1 } })).status, 201);
    assert.equal((await history('old')).status, 200);
    await t.app.changes!.purge(t.database.db, new Date(Date.now() + 1000).toISOString());
    expectError(await history('old'), 404);
    // A row still there whose changes are gone has no history either (CONTRACT §14: none kept → 404).
    assert.equal((await t.get('/api/tables/hist/rows/old')).status, 200);
  });

  it('bad input: pageSize out of range, an unknown parameter, an altered cursor, or one of another row → 400', async () => {
    assert.equal((await t.post('/api/tables/hist/rows', { id: 'b1', values: { n: 1 } })).status, 201);
    assert.equal((await t.patch('/api/tables/hist/rows/b1', { values: { n: 2 } })).status, 200);
    assert.equal((await t.post('/api/tables/hist/rows', { id: 'b2', values: { n: 1 } })).status, 201);
    assert.equal((await t.patch('/api/tables/hist/rows/b2', { values: { n: 2 } })).status, 200);
    for (const q of ['?pageSize=0', '?pageSize=201', '?pageSize=x', '?page=2']) {
      const e = expectError(await history('b1', q), 400);
      assert.match(String(e.message) + JSON.stringify(e.details ?? []), /pageSize|page/, q);
    }
    const first = await history('b1', '?pageSize=1');
    const cursor = new URL(first.body.nextUrl).searchParams.get('cursor') as string;
    const altered = (cursor[0] === 'A' ? 'B' : 'A') + cursor.slice(1);
    expectError(await history('b1', `?pageSize=1&cursor=${encodeURIComponent(altered)}`), 400);
    expectError(await history('b2', `?pageSize=1&cursor=${encodeURIComponent(cursor)}`), 400);
    expectError(await history('b1', '?cursor=junk'), 400);
    // The cursor of b1 used again on b1 reads on.
    const next = await history('b1', `?pageSize=1&cursor=${encodeURIComponent(cursor)}`);
    assert.equal(next.status, 200);
    assert.equal(next.body.data[0].type, 'create');
  });
});
