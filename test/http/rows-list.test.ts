import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { physicalColumn, physicalTable } from '../../src/store/user-tables.ts';
import { type Reply, type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';

/**
 * The row list (seed spec "List rows", "Filter", "Sort"; CONTRACT §6): page size, default order,
 * nextUrl/Link and cursor walks, every filter operator per type, combinators, system columns,
 * sort with nulls placement, and the 400s for bad parameters. Example-based; the randomised
 * filter/sort/cursor walks live in test/property/.
 */

const ORIGIN = 'http://rowhouse.test';

interface Field {
  id: string;
  code: string;
}

/** The path of an absolute nextUrl, checked to be on the configured public URL. */
function pathOf(nextUrl: string): string {
  assert.ok(nextUrl.startsWith(`${ORIGIN}/`), `nextUrl ${nextUrl} is not on ${ORIGIN}`);
  return nextUrl.slice(ORIGIN.length);
}

function expectLink(reply: Reply): void {
  if (reply.body.nextUrl === null) assert.equal(reply.headers.link, undefined, 'no Link header on the last page');
  else assert.equal(reply.headers.link, `<${reply.body.nextUrl}>; rel="next"`);
}

/** Follows nextUrl from the first page to the last; every page checked for shape and Link. */
async function walk(t: TestApp, url: string, query: Record<string, unknown> = {}): Promise<{ rows: any[]; pages: Reply[] }> {
  const pages: Reply[] = [];
  let r = await t.get(url, { query });
  for (;;) {
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(Object.keys(r.body).sort(), ['data', 'nextUrl']);
    expectLink(r);
    pages.push(r);
    if (r.body.nextUrl === null) break;
    assert.ok(pages.length < 500, 'walk does not end');
    assert.ok(r.body.data.length > 0, 'a page before the last is not empty');
    r = await t.get(pathOf(r.body.nextUrl));
  }
  return { rows: pages.flatMap((p) => p.body.data), pages };
}

/** A URL with a query string built by hand, for repeated or odd parameters. */
const withQuery = (url: string, pairs: [string, string][]) => `${url}?${new URLSearchParams(pairs)}`;

eachDatabase('rows: list', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(kind);
  });
  after(() => t.close());

  async function makeTable(code: string, fields: Record<string, unknown>[]): Promise<{ id: string; fields: Field[] }> {
    const r = await t.post('/api/tables', { code, name: code, fields });
    assert.equal(r.status, 201, r.text);
    return r.body;
  }

  /** Rows written straight into the physical table, to control createdAt and ids. */
  async function insertRaw(table: { id: string; fields: Field[] }, rows: { id: string; createdAt: string; label: string }[]) {
    const label = table.fields.find((f) => f.code === 'label') as Field;
    await t.database.db
      .insertInto(physicalTable(table.id))
      .values(
        rows.map((r) => ({
          id: r.id,
          created_at: r.createdAt,
          updated_at: r.createdAt,
          created_by: t.ownerId,
          updated_by: t.ownerId,
          [physicalColumn(label.id)]: r.label,
        })),
      )
      .execute();
  }

  describe('paging', () => {
    it('pageSize defaults to 50; nextUrl repeats it and walks the rest', async () => {
      const table = await makeTable('p55', [{ code: 'label', type: 'text' }]);
      for (let i = 0; i < 55; i++) {
        const r = await t.post('/api/tables/p55/rows', { values: { label: `r${i}` } });
        assert.equal(r.status, 201, r.text);
      }
      const first = await t.get('/api/tables/p55/rows');
      assert.equal(first.status, 200, first.text);
      assert.equal(first.body.data.length, 50);
      const next = new URL(first.body.nextUrl);
      assert.equal(next.origin, ORIGIN);
      assert.equal(next.pathname, '/api/tables/p55/rows');
      assert.deepEqual([...next.searchParams.keys()].sort(), ['cursor', 'pageSize']);
      assert.equal(next.searchParams.get('pageSize'), '50');
      expectLink(first);
      const second = await t.get(pathOf(first.body.nextUrl));
      assert.equal(second.status, 200, second.text);
      assert.equal(second.body.data.length, 5);
      assert.equal(second.body.nextUrl, null);
      expectLink(second);
      const labels = [...first.body.data, ...second.body.data].map((r: any) => r.values.label);
      assert.deepEqual(new Set(labels).size, 55);
      // pageSize 200 takes them all at once; 1 pages one by one.
      const all = await t.get('/api/tables/p55/rows', { query: { pageSize: '200' } });
      assert.equal(all.body.data.length, 55);
      assert.equal(all.body.nextUrl, null);
      assert.deepEqual(all.body.data.map((r: any) => r.values.label), labels);
      const ones = await walk(t, `/api/tables/${table.id}/rows`, { pageSize: '1' });
      assert.equal(ones.pages.length, 55);
      assert.deepEqual(ones.rows.map((r) => r.values.label), labels);
    });

    it('pageSize outside 1..200 or not an integer is a 400 naming pageSize', async () => {
      await makeTable('psize', [{ code: 'label', type: 'text' }]);
      for (const v of ['0', '201', 'abc', '1.5', '-1', '', '1e2', ' 5', '0x10', '99999999999999999999']) {
        const body = expectError(await t.get('/api/tables/psize/rows', { query: { pageSize: v } }), 400);
        assert.match(body.message as string, /pageSize/, v);
      }
      for (const v of ['1', '200', '50']) assert.equal((await t.get('/api/tables/psize/rows', { query: { pageSize: v } })).status, 200, v);
    });

    it('the last page has nextUrl null and no Link, with no empty extra page at an exact multiple', async () => {
      await makeTable('p6', [{ code: 'label', type: 'text' }]);
      const empty = await t.get('/api/tables/p6/rows');
      assert.deepEqual(empty.body, { data: [], nextUrl: null });
      expectLink(empty);
      for (let i = 0; i < 6; i++) assert.equal((await t.post('/api/tables/p6/rows', { values: { label: `r${i}` } })).status, 201);
      const all = (await t.get('/api/tables/p6/rows')).body.data.map((r: any) => r.id);
      assert.equal(new Set(all).size, 6);
      for (const [size, pages] of [[3, 2], [2, 3], [6, 1], [1, 6], [4, 2], [5, 2], [7, 1]]) {
        const w = await walk(t, '/api/tables/p6/rows', { pageSize: String(size) });
        assert.equal(w.pages.length, pages, `pageSize ${size}`);
        assert.deepEqual(w.rows.map((r) => r.id), all, `pageSize ${size}`);
        assert.ok(w.pages.every((p) => p.body.data.length > 0));
      }
    });

    it('lists full row records, the same as a single-row retrieval', async () => {
      await makeTable('recs', [
        { code: 'label', type: 'text', required: true },
        { code: 'at', type: 'dateTime' },
        { code: 'tags', type: 'list' },
      ]);
      const made = await t.post('/api/tables/recs/rows', { values: { label: 'x', at: '2024-01-01T09:00:00+09:00', tags: [1] } });
      assert.equal(made.status, 201, made.text);
      const list = await t.get('/api/tables/recs/rows');
      assert.deepEqual(list.body.data, [made.body]);
      assert.equal(list.body.data[0].values.at, '2024-01-01T00:00:00.000Z');
    });

    it('default order is createdAt ascending, then id ascending for equal createdAt', async () => {
      const table = await makeTable('order', [{ code: 'label', type: 'text' }]);
      const same = '2024-03-03T03:03:03.003Z';
      await insertRaw(table, [
        { id: 'k3', createdAt: same, label: 'k3' },
        { id: 'late', createdAt: '2024-03-04T00:00:00.000Z', label: 'late' },
        { id: 'k1', createdAt: same, label: 'k1' },
        { id: 'k5', createdAt: same, label: 'k5' },
        { id: 'z-early', createdAt: '2024-03-01T00:00:00.000Z', label: 'z-early' },
        { id: 'k2', createdAt: same, label: 'k2' },
        { id: 'K9', createdAt: same, label: 'K9' },
        { id: 'k4', createdAt: same, label: 'k4' },
      ]);
      const expected = ['z-early', 'K9', 'k1', 'k2', 'k3', 'k4', 'k5', 'late'];
      const all = await t.get('/api/tables/order/rows');
      assert.deepEqual(all.body.data.map((r: any) => r.id), expected);
      assert.equal(all.body.data[1].createdAt, same);
      // Cursors split the run of equal createdAt without losing or repeating a row.
      for (const size of [1, 2, 3]) {
        const w = await walk(t, '/api/tables/order/rows', { pageSize: String(size) });
        assert.deepEqual(w.rows.map((r) => r.id), expected, `pageSize ${size}`);
      }
      // Mixed directions on system columns, walked.
      const mixed = [{ createdAt: { direction: 'asc', nulls: 'nullsLast' } }, { id: { direction: 'desc', nulls: 'nullsFirst' } }];
      const mixedOrder = ['z-early', 'k5', 'k4', 'k3', 'k2', 'k1', 'K9', 'late'];
      for (const size of ['2', '3', '200']) {
        const w = await walk(t, '/api/tables/order/rows', { sort: mixed, pageSize: size });
        assert.deepEqual(w.rows.map((r) => r.id), mixedOrder, `pageSize ${size}`);
      }
      const desc = await walk(t, '/api/tables/order/rows', { sort: [{ createdAt: { direction: 'desc', nulls: 'nullsFirst' } }], pageSize: '3' });
      assert.deepEqual(desc.rows.map((r) => r.id), ['late', 'K9', 'k1', 'k2', 'k3', 'k4', 'k5', 'z-early']);
      // Rows created over HTTP come in ascending createdAt.
      await makeTable('order2', [{ code: 'label', type: 'text' }]);
      for (let i = 0; i < 10; i++) await t.post('/api/tables/order2/rows', { values: { label: String(i) } });
      const rows = (await t.get('/api/tables/order2/rows')).body.data;
      for (let i = 1; i < rows.length; i++) {
        const [a, b] = [rows[i - 1], rows[i]];
        assert.ok(a.createdAt < b.createdAt || (a.createdAt === b.createdAt && a.id < b.id), `${a.createdAt}/${a.id} before ${b.createdAt}/${b.id}`);
      }
      assert.equal(rows.length, 10);
    });

    it('nextUrl is absolute on the public URL, repeats pageSize, filter and sort as given, adds cursor; Link carries it', async () => {
      const table = await makeTable('nexts', [{ code: 'label', type: 'text' }, { code: 'n', type: 'number' }]);
      for (let i = 0; i < 5; i++) await t.post('/api/tables/nexts/rows', { values: { label: `r${i}`, n: i } });
      // Odd but valid JSON text: spaces and a unicode escape are kept as they were sent.
      const filter = '{ "values": {"n": {"_gte": 1}}, "_not": {"values": {"label": {"_eq": "r\\u0034"}}} }';
      const sort = '[{"n": {"direction": "desc", "nulls": "nullsLast"}}]';
      for (const ref of ['nexts', table.id]) {
        const first = await t.get(withQuery(`/api/tables/${ref}/rows`, [['filter', filter], ['sort', sort], ['pageSize', '2']]));
        assert.equal(first.status, 200, first.text);
        assert.deepEqual(first.body.data.map((r: any) => r.values.label), ['r3', 'r2']);
        const next = new URL(first.body.nextUrl);
        assert.equal(`${next.origin}${next.pathname}`, `${ORIGIN}/api/tables/${ref}/rows`);
        assert.deepEqual([...next.searchParams.keys()].sort(), ['cursor', 'filter', 'pageSize', 'sort']);
        assert.equal(next.searchParams.get('pageSize'), '2');
        assert.equal(next.searchParams.get('filter'), filter);
        assert.equal(next.searchParams.get('sort'), sort);
        assert.match(next.searchParams.get('cursor') as string, /^[A-Za-z0-9_.-]+$/);
        expectLink(first);
        const second = await t.get(pathOf(first.body.nextUrl));
        assert.equal(second.status, 200, second.text);
        assert.deepEqual(second.body.data.map((r: any) => r.values.label), ['r1']);
        assert.equal(second.body.nextUrl, null);
        assert.equal(second.headers.link, undefined);
      }
    });

    it('nextUrl carries filter values with URL-special characters intact', async () => {
      await makeTable('special', [{ code: 'label', type: 'text' }]);
      const odd = ['a+b', 'a b', 'a&b=c', 'x#y', '100%', 'é/ü?', 'plain'];
      for (const label of odd) assert.equal((await t.post('/api/tables/special/rows', { values: { label } })).status, 201);
      const filter = { _or: odd.slice(0, 6).map((label) => ({ values: { label: { _eq: label } } })) };
      const w = await walk(t, '/api/tables/special/rows', { filter, pageSize: '2' });
      assert.equal(w.pages.length, 3);
      assert.deepEqual(w.rows.map((r) => r.values.label).sort(), odd.slice(0, 6).sort());
      for (const p of w.pages.slice(0, -1)) assert.equal(new URL(p.body.nextUrl).searchParams.get('filter'), JSON.stringify(filter));
    });

    it('a walk returns every row that exists throughout it exactly once, while others are inserted and deleted', async () => {
      await makeTable('moving', [{ code: 'label', type: 'text' }, { code: 'n', type: 'number' }]);
      const ids: string[] = [];
      for (let i = 0; i < 9; i++) ids.push((await t.post('/api/tables/moving/rows', { values: { label: `r${i}`, n: i % 3 } })).body.id);
      const sort = [{ n: { direction: 'asc', nulls: 'nullsFirst' } }];
      const seen: string[] = [];
      let r = await t.get('/api/tables/moving/rows', { query: { pageSize: '2', sort } });
      let step = 0;
      for (;;) {
        assert.equal(r.status, 200, r.text);
        seen.push(...r.body.data.map((x: any) => x.id));
        if (r.body.nextUrl === null) break;
        // Between pages: insert rows on both sides of the cursor and delete one not seen yet.
        await t.post('/api/tables/moving/rows', { values: { label: `new${step}`, n: step % 2 === 0 ? null : 5 } });
        if (step === 1) {
          const unseen = ids.filter((id) => !seen.includes(id)).at(-1) as string;
          assert.equal((await t.delete(`/api/tables/moving/rows/${unseen}`)).status, 204);
          ids.splice(ids.indexOf(unseen), 1);
        }
        step++;
        r = await t.get(pathOf(r.body.nextUrl));
      }
      assert.equal(new Set(seen).size, seen.length, 'no row twice');
      for (const id of ids) assert.ok(seen.includes(id), `row ${id} was returned`);
    });
  });

  describe('filter and sort', () => {
    let table: { id: string; fields: Field[] };
    const url = '/api/tables/things/rows';
    const CREATED = ['2020-01-01', '2020-01-02', '2020-01-03', '2020-01-04', '2020-01-05', '2020-01-06'].map((d) => `${d}T00:00:00.000Z`);

    before(async () => {
      table = await makeTable('things', [
        { code: 'label', type: 'text', required: true },
        { code: 'name', type: 'text' },
        { code: 'n', type: 'number' },
        { code: 'flag', type: 'boolean' },
        { code: 'at', type: 'dateTime' },
        { code: 'day', type: 'date' },
        { code: 'clock', type: 'time' },
        { code: 'month', type: 'yearMonth' },
        { code: 'color', type: 'select', options: { choices: ['red', 'green', 'blue', 'Red'] } },
        { code: 'meta', type: 'record' },
        { code: 'tags', type: 'list' },
        { code: 'file', type: 'file' },
      ]);
      const rows = [
        { label: 'a', name: 'apple', n: 1, flag: true, at: '2024-01-01T00:00:00Z', day: '2024-01-01', clock: '08:00:00', month: '2024-01', color: 'red', meta: { k: 1 }, tags: ['x', 1, true] },
        { label: 'b', name: 'Apple', n: 2.5, flag: false, at: '2024-06-01T12:00:00+02:00', day: '2024-06-01', clock: '12:30:00', month: '2024-06', color: 'green', meta: null, tags: ['y', '1'] },
        { label: 'c', name: 'banana', n: -3, flag: null, at: null, day: '2023-12-31', clock: '23:59:59', month: '2023-12', color: 'blue', meta: {}, tags: [2, false, { x: 1 }] },
        { label: 'd', name: '50% off_sale\\path', n: 0, flag: true, at: '2025-01-01T00:00:00Z', day: null, clock: null, month: null, color: null, meta: { a: [1] }, tags: [] },
        { label: 'e', name: null, n: null, flag: false, at: '2023-01-01T00:00:00Z', day: '2024-02-29', clock: '00:00:00', month: '2024-02', color: 'Red', meta: null, tags: null },
        { label: 'f', name: '500 offXsale/path', n: 100, flag: true, at: '2024-06-01T10:00:00.001Z', day: '2024-01-01', clock: '09:15:00', month: '2024-01', color: 'red', meta: { k: 2 }, tags: ['x', 'x'] },
      ];
      for (const values of rows) {
        const r = await t.post(`${url}`, { id: values.label, values });
        assert.equal(r.status, 201, r.text);
      }
      // Fixed, distinct creation times a < b < … < f.
      for (const [i, id] of ['a', 'b', 'c', 'd', 'e', 'f'].entries()) {
        await t.database.db.updateTable(physicalTable(table.id)).set({ created_at: CREATED[i] }).where('id', '=', id).execute();
      }
    });

    const labels = (r: Reply) => r.body.data.map((x: any) => x.values.label);

    async function filtered(filter: unknown): Promise<string[]> {
      const r = await t.get(url, { query: { filter, pageSize: '200' } });
      assert.equal(r.status, 200, `${JSON.stringify(filter)}: ${r.text}`);
      return labels(r).sort();
    }

    async function check(cases: [unknown, string[]][]): Promise<void> {
      for (const [filter, expected] of cases) assert.deepEqual(await filtered(filter), expected, JSON.stringify(filter));
    }

    const v = (code: string, cond: Record<string, unknown>) => ({ values: { [code]: cond } });

    it('text: every operator, case-sensitive, byte order', async () => {
      await check([
        [v('name', { _eq: 'apple' }), ['a']],
        [v('name', { _eq: 'APPLE' }), []],
        [v('name', { _gt: 'apple' }), ['c']],
        [v('name', { _gte: 'apple' }), ['a', 'c']],
        [v('name', { _lt: 'Apple' }), ['d', 'f']],
        [v('name', { _lte: 'Apple' }), ['b', 'd', 'f']],
        [v('name', { _contains: 'pple' }), ['a', 'b']],
        [v('name', { _contains: 'PPLE' }), []],
        [v('name', { _startsWith: 'a' }), ['a']],
        [v('name', { _startsWith: 'A' }), ['b']],
        [v('name', { _endsWith: 'le' }), ['a', 'b']],
        [v('name', { _endsWith: 'LE' }), []],
        [v('name', { _contains: '' }), ['a', 'b', 'c', 'd', 'f']],
        [v('name', { _isNull: true }), ['e']],
        [v('name', { _isNull: false }), ['a', 'b', 'c', 'd', 'f']],
        [v('name', { _gte: 'Apple', _lt: 'b' }), ['a', 'b']],
      ]);
    });

    it('pattern operators take %, _ and \\ literally', async () => {
      // d: '50% off_sale\path'; f: '500 offXsale/path' would match if % _ \ were wildcards or escapes.
      await check([
        [v('name', { _contains: '%' }), ['d']],
        [v('name', { _contains: '_' }), ['d']],
        [v('name', { _contains: '\\' }), ['d']],
        [v('name', { _contains: 'off_sale' }), ['d']],
        [v('name', { _startsWith: '50%' }), ['d']],
        [v('name', { _startsWith: '5_0' }), []],
        [v('name', { _endsWith: '\\path' }), ['d']],
        [v('name', { _endsWith: 'e\\path' }), ['d']],
        [v('name', { _contains: '\\p' }), ['d']],
        [v('name', { _contains: '0% o' }), ['d']],
        [v('name', { _contains: '%%' }), []],
        [v('name', { _startsWith: '%' }), []],
        [v('name', { _contains: '\\\\' }), []],
        [v('name', { _contains: 'off' }), ['d', 'f']],
      ]);
    });

    it('number: every operator and ranges', async () => {
      await check([
        [v('n', { _eq: 2.5 }), ['b']],
        [v('n', { _eq: 0 }), ['d']],
        [v('n', { _gt: 1 }), ['b', 'f']],
        [v('n', { _gte: 1 }), ['a', 'b', 'f']],
        [v('n', { _lt: 0 }), ['c']],
        [v('n', { _lte: 0 }), ['c', 'd']],
        [v('n', { _gte: 0, _lt: 2.5 }), ['a', 'd']],
        [v('n', { _gt: -3.5, _lte: -3 }), ['c']],
        [v('n', { _isNull: true }), ['e']],
        [v('n', { _isNull: false }), ['a', 'b', 'c', 'd', 'f']],
      ]);
    });

    it('boolean: _eq and _isNull', async () => {
      await check([
        [v('flag', { _eq: true }), ['a', 'd', 'f']],
        [v('flag', { _eq: false }), ['b', 'e']],
        [v('flag', { _isNull: true }), ['c']],
        [v('flag', { _isNull: false }), ['a', 'b', 'd', 'e', 'f']],
      ]);
    });

    it('dateTime: compared as instants, offsets normalised', async () => {
      await check([
        [v('at', { _eq: '2024-06-01T12:00:00+02:00' }), ['b']],
        [v('at', { _eq: '2024-06-01T10:00:00Z' }), ['b']],
        [v('at', { _eq: '2024-06-01T10:00:00.000+00:00' }), ['b']],
        [v('at', { _gt: '2024-06-01T10:00:00Z' }), ['d', 'f']],
        [v('at', { _gte: '2024-06-01T10:00:00Z' }), ['b', 'd', 'f']],
        [v('at', { _lt: '2024-01-01T01:00:00+01:00' }), ['e']],
        [v('at', { _lte: '2024-01-01T01:00:00+01:00' }), ['a', 'e']],
        [v('at', { _gte: '2023-12-31T20:00:00-05:00', _lt: '2024-06-01T10:00:00.001Z' }), ['b']],
        [v('at', { _isNull: true }), ['c']],
      ]);
    });

    it('date, time and yearMonth: every comparison', async () => {
      await check([
        [v('day', { _eq: '2024-01-01' }), ['a', 'f']],
        [v('day', { _gt: '2024-01-01' }), ['b', 'e']],
        [v('day', { _gte: '2024-01-01' }), ['a', 'b', 'e', 'f']],
        [v('day', { _lt: '2024-01-01' }), ['c']],
        [v('day', { _lte: '2023-12-31' }), ['c']],
        [v('day', { _eq: '2024-02-29' }), ['e']],
        [v('day', { _isNull: true }), ['d']],
        [v('clock', { _eq: '08:00:00' }), ['a']],
        [v('clock', { _gt: '09:00:00' }), ['b', 'c', 'f']],
        [v('clock', { _gte: '09:15:00' }), ['b', 'c', 'f']],
        [v('clock', { _lt: '08:00:00' }), ['e']],
        [v('clock', { _lte: '08:00:00' }), ['a', 'e']],
        [v('clock', { _isNull: true }), ['d']],
        [v('month', { _eq: '2024-01' }), ['a', 'f']],
        [v('month', { _gt: '2024-01' }), ['b', 'e']],
        [v('month', { _gte: '2024-01' }), ['a', 'b', 'e', 'f']],
        [v('month', { _lt: '2024-01' }), ['c']],
        [v('month', { _lte: '2024-02' }), ['a', 'c', 'e', 'f']],
        [v('month', { _isNull: true }), ['d']],
      ]);
    });

    it('select: compared as text (any text, not only a current choice), pattern operators case-sensitive', async () => {
      await check([
        [v('color', { _eq: 'red' }), ['a', 'f']],
        [v('color', { _eq: 'Red' }), ['e']],
        [v('color', { _eq: 'purple' }), []],
        [v('color', { _gt: 'green' }), ['a', 'f']],
        [v('color', { _gte: 'green' }), ['a', 'b', 'f']],
        [v('color', { _lt: 'blue' }), ['e']],
        [v('color', { _lte: 'Red' }), ['e']],
        [v('color', { _contains: 'e' }), ['a', 'b', 'c', 'e', 'f']],
        [v('color', { _startsWith: 'R' }), ['e']],
        [v('color', { _endsWith: 'ue' }), ['c']],
        [v('color', { _isNull: true }), ['d']],
      ]);
    });

    it('filter values are checked by type, not by the field\'s write options', async () => {
      await makeTable('opts', [
        { code: 'n', type: 'number', options: { min: 0, max: 10 } },
        { code: 's', type: 'text', options: { maxLength: 3 } },
      ]);
      assert.equal((await t.post('/api/tables/opts/rows', { values: { n: 5, s: 'abc' } })).status, 201);
      expectError(await t.post('/api/tables/opts/rows', { values: { n: 11 } }), 400);
      expectError(await t.post('/api/tables/opts/rows', { values: { s: 'abcd' } }), 400);
      const q = async (filter: unknown) => {
        const r = await t.get('/api/tables/opts/rows', { query: { filter } });
        assert.equal(r.status, 200, r.text);
        return r.body.data.length;
      };
      assert.equal(await q(v('n', { _gt: -100, _lt: 1000 })), 1);
      assert.equal(await q(v('s', { _lt: 'abcdef' })), 1);
      assert.equal(await q(v('s', { _startsWith: 'abcd' })), 0);
    });

    it('list: _contains matches an element with its JSON type; record, list and file take _isNull', async () => {
      await check([
        [v('tags', { _contains: 'x' }), ['a', 'f']],
        [v('tags', { _contains: 1 }), ['a']],
        [v('tags', { _contains: '1' }), ['b']],
        [v('tags', { _contains: true }), ['a']],
        [v('tags', { _contains: false }), ['c']],
        [v('tags', { _contains: 2 }), ['c']],
        [v('tags', { _contains: 2.0 }), ['c']],
        [v('tags', { _contains: 'z' }), []],
        [v('tags', { _contains: 'X' }), []],
        [v('tags', { _isNull: true }), ['e']],
        [v('tags', { _isNull: false }), ['a', 'b', 'c', 'd', 'f']],
        [v('meta', { _isNull: true }), ['b', 'e']],
        [v('meta', { _isNull: false }), ['a', 'c', 'd', 'f']],
        [v('file', { _isNull: true }), ['a', 'b', 'c', 'd', 'e', 'f']],
        [v('file', { _isNull: false }), []],
      ]);
    });

    it('_and, _or and _not, nested; keys of one object are ANDed', async () => {
      await check([
        [{}, ['a', 'b', 'c', 'd', 'e', 'f']],
        [{ values: {} }, ['a', 'b', 'c', 'd', 'e', 'f']],
        [{ _and: [v('n', { _gt: 0 }), v('flag', { _eq: true })] }, ['a', 'f']],
        [{ _or: [v('name', { _eq: 'banana' }), v('n', { _gte: 100 })] }, ['c', 'f']],
        [{ _or: [v('name', { _eq: 'nothing' })] }, []],
        // _not is the exact complement: rows where the compared value is null match it.
        [{ _not: v('flag', { _eq: true }) }, ['b', 'c', 'e']],
        [{ _not: v('n', { _gt: 1 }) }, ['a', 'c', 'd', 'e']],
        [{ _not: { _not: v('flag', { _eq: true }) } }, ['a', 'd', 'f']],
        [
          { _or: [{ _and: [v('color', { _eq: 'red' }), { _not: v('name', { _startsWith: 'a' }) }] }, v('n', { _lt: 0 })] },
          ['c', 'f'],
        ],
        [{ values: { flag: { _eq: true }, n: { _lt: 50 } } }, ['a', 'd']],
        [{ ...v('flag', { _eq: true }), id: { _eq: 'f' } }, ['f']],
        [{ ...v('flag', { _eq: true }), _or: [v('n', { _eq: 0 }), v('n', { _eq: 100 })], _not: { id: { _eq: 'd' } } }, ['f']],
        [{ _and: [{ _or: [v('day', { _isNull: true }), v('clock', { _lt: '01:00:00' })] }, { _not: v('label', { _eq: 'e' }) }] }, ['d']],
      ]);
    });

    it('system columns: id, createdAt range, updatedAt, createdBy, updatedBy', async () => {
      await check([
        [{ id: { _eq: 'c' } }, ['c']],
        [{ id: { _eq: 'C' } }, []],
        [{ id: { _gt: 'd' } }, ['e', 'f']],
        [{ id: { _startsWith: 'b' } }, ['b']],
        [{ createdAt: { _gte: '2020-01-02T00:00:00Z', _lt: '2020-01-04T00:00:00+00:00' } }, ['b', 'c']],
        [{ createdAt: { _eq: '2020-01-01T01:00:00+01:00' } }, ['a']],
        [{ createdAt: { _gt: '2020-01-05T00:00:00.000Z' } }, ['f']],
        [{ createdAt: { _lte: '2020-01-01T00:00:00Z' } }, ['a']],
        [{ updatedAt: { _gt: '2021-01-01T00:00:00Z' } }, ['a', 'b', 'c', 'd', 'e', 'f']],
        [{ updatedAt: { _isNull: true } }, []],
        [{ createdBy: { _eq: t.ownerId } }, ['a', 'b', 'c', 'd', 'e', 'f']],
        [{ createdBy: { _eq: 'someone-else' } }, []],
        [{ updatedBy: { _startsWith: t.ownerId.slice(0, 8) } }, ['a', 'b', 'c', 'd', 'e', 'f']],
        [{ _not: { createdAt: { _lt: '2020-01-03T00:00:00Z' } }, ...v('n', { _isNull: false }) }, ['c', 'd', 'f']],
      ]);
    });

    it('a filtered walk with a small pageSize returns exactly the matching rows', async () => {
      const filter = { _or: [v('flag', { _eq: true }), v('n', { _isNull: true })] };
      const w = await walk(t, url, { filter, pageSize: '1' });
      assert.deepEqual(w.rows.map((r) => r.values.label), ['a', 'd', 'e', 'f']);
      assert.equal(w.pages.length, 4);
    });

    async function sorted(sort: unknown, pageSize = '200'): Promise<string[]> {
      const r = await t.get(url, { query: { sort, pageSize } });
      assert.equal(r.status, 200, `${JSON.stringify(sort)}: ${r.text}`);
      return labels(r);
    }

    const s = (key: string, direction: 'asc' | 'desc', nulls: 'nullsFirst' | 'nullsLast') => ({ [key]: { direction, nulls } });

    const SORTS: [unknown[], string[]][] = [
      [[], ['a', 'b', 'c', 'd', 'e', 'f']],
      [[s('n', 'asc', 'nullsLast')], ['c', 'd', 'a', 'b', 'f', 'e']],
      [[s('n', 'asc', 'nullsFirst')], ['e', 'c', 'd', 'a', 'b', 'f']],
      [[s('n', 'desc', 'nullsFirst')], ['e', 'f', 'b', 'a', 'd', 'c']],
      [[s('n', 'desc', 'nullsLast')], ['f', 'b', 'a', 'd', 'c', 'e']],
      [[s('flag', 'desc', 'nullsLast'), s('n', 'asc', 'nullsLast')], ['d', 'a', 'f', 'b', 'e', 'c']],
      [[s('flag', 'asc', 'nullsFirst'), s('n', 'desc', 'nullsFirst')], ['c', 'e', 'b', 'f', 'a', 'd']],
      [[s('color', 'asc', 'nullsFirst'), s('name', 'desc', 'nullsLast')], ['d', 'e', 'c', 'b', 'a', 'f']],
      [[s('name', 'asc', 'nullsLast')], ['d', 'f', 'b', 'a', 'c', 'e']],
      [[s('name', 'desc', 'nullsFirst')], ['e', 'c', 'a', 'b', 'f', 'd']],
      // Equal days (a, f) fall back to id ascending.
      [[s('day', 'asc', 'nullsLast')], ['c', 'a', 'f', 'e', 'b', 'd']],
      [[s('day', 'desc', 'nullsLast')], ['b', 'e', 'a', 'f', 'c', 'd']],
      [[s('at', 'asc', 'nullsFirst')], ['c', 'e', 'a', 'b', 'f', 'd']],
      [[s('at', 'desc', 'nullsLast')], ['d', 'f', 'b', 'a', 'e', 'c']],
      [[s('clock', 'desc', 'nullsFirst')], ['d', 'c', 'b', 'f', 'a', 'e']],
      [[s('month', 'asc', 'nullsFirst'), s('id', 'desc', 'nullsLast')], ['d', 'c', 'f', 'a', 'e', 'b']],
      [[s('createdAt', 'desc', 'nullsLast')], ['f', 'e', 'd', 'c', 'b', 'a']],
      [[s('createdAt', 'asc', 'nullsFirst')], ['a', 'b', 'c', 'd', 'e', 'f']],
      [[s('id', 'desc', 'nullsFirst')], ['f', 'e', 'd', 'c', 'b', 'a']],
      [[s('updatedBy', 'asc', 'nullsLast'), s('createdAt', 'desc', 'nullsLast')], ['f', 'e', 'd', 'c', 'b', 'a']],
      [[s('label', 'desc', 'nullsLast')], ['f', 'e', 'd', 'c', 'b', 'a']],
    ];

    it('sorts on fields and system columns, with direction, nulls placement and several keys', async () => {
      for (const [sort, expected] of SORTS) assert.deepEqual(await sorted(sort), expected, JSON.stringify(sort));
    });

    it('walks every sort page by page with the same order, each row once', async () => {
      for (const [sort, expected] of SORTS) {
        for (const size of ['1', '2', '4']) {
          const w = await walk(t, url, { sort, pageSize: size });
          assert.deepEqual(w.rows.map((r) => r.values.label), expected, `${JSON.stringify(sort)} pageSize ${size}`);
        }
      }
    });

    it('filter and sort together, walked', async () => {
      const filter = { _not: v('label', { _eq: 'b' }) };
      const sort = [s('flag', 'desc', 'nullsFirst'), s('clock', 'asc', 'nullsFirst')];
      // flag null: c; true: d (clock null), a (08:00), f (09:15); false: e.
      const w = await walk(t, url, { filter, sort, pageSize: '2' });
      assert.deepEqual(w.rows.map((r) => r.values.label), ['c', 'd', 'a', 'f', 'e']);
    });

    describe('bad input', () => {
      async function bad(query: Record<string, unknown>, mention: RegExp | RegExp[], path = url): Promise<Record<string, unknown>> {
        const r = await t.get(path, { query });
        const body = expectError(r, 400);
        for (const m of [mention].flat()) assert.match(body.message as string, m, `${JSON.stringify(query)}: ${body.message}`);
        return body;
      }

      it('filter or sort that is not JSON', async () => {
        await bad({ filter: '{' }, /filter/);
        await bad({ filter: "{'values': {}}" }, /filter/);
        await bad({ filter: '' }, /filter/);
        await bad({ sort: '[' }, /sort/);
        await bad({ sort: 'createdAt' }, /sort/);
        const both = await bad({ filter: '{', sort: ']' }, [/filter/, /sort/]);
        assert.equal((both.details as unknown[]).length, 2);
      });

      it('a filter of the wrong shape', async () => {
        for (const filter of ['[]', '"x"', 'null', '1', 'true']) await bad({ filter }, /filter/);
        await bad({ filter: { values: [] } }, /filter\.values/);
        await bad({ filter: { values: { n: 1 } } }, /filter\.values\.n/);
        await bad({ filter: { values: { n: {} } } }, /filter\.values\.n/);
        await bad({ filter: { values: { n: [] } } }, /filter\.values\.n/);
        await bad({ filter: { _and: {} } }, /_and/);
        await bad({ filter: { _and: [] } }, /_and/);
        await bad({ filter: { _or: 'x' } }, /_or/);
        await bad({ filter: { _not: [v('n', { _eq: 1 })] } }, /_not/);
        await bad({ filter: { _and: [v('n', { _eq: 1 }), 'x'] } }, /_and\[1\]/);
        await bad({ filter: { createdAt: '2020-01-01T00:00:00Z' } }, /createdAt/);
      });

      it('unknown field, column or operator', async () => {
        await bad({ filter: v('nope', { _eq: 1 }) }, /nope/);
        await bad({ filter: { nope: { _eq: 1 } } }, /nope/);
        await bad({ filter: { label: { _eq: 'a' } } }, /label/); // a field code is not a system column
        await bad({ filter: { created_at: { _eq: '2020-01-01T00:00:00Z' } } }, /created_at/);
        await bad({ filter: { _nor: [] } }, /_nor/);
        await bad({ filter: v('n', { _ne: 1 }) }, /_ne/);
        await bad({ filter: v('n', { eq: 1 }) }, /eq/);
        await bad({ filter: v('name', { _like: 'a%' }) }, /_like/);
        await bad({ filter: v('name', { _in: ['a'] }) }, /_in/);
        await bad({ filter: { id: { _neq: 'a' } } }, /_neq/);
        await bad({ filter: { _and: [{ _or: [{ _not: v('ghost', { _eq: 1 }) }] }] } }, /ghost/);
      });

      it('an operator the type does not allow', async () => {
        const cases: [string, string, unknown][] = [
          ['flag', '_gt', true],
          ['flag', '_lte', false],
          ['flag', '_contains', 'true'],
          ['n', '_contains', 1],
          ['n', '_startsWith', '1'],
          ['day', '_startsWith', '2024'],
          ['at', '_contains', '2024'],
          ['clock', '_endsWith', '00'],
          ['month', '_contains', '01'],
          ['meta', '_startsWith', 'x'],
          ['meta', '_eq', { k: 1 }],
          ['meta', '_contains', 'k'],
          ['tags', '_eq', ['x']],
          ['tags', '_gt', 'x'],
          ['tags', '_startsWith', 'x'],
          ['file', '_eq', 'x'],
          ['file', '_contains', 'x'],
        ];
        for (const [code, op, value] of cases) {
          const body = await bad({ filter: v(code, { [op]: value }) }, [new RegExp(code), new RegExp(op)]);
          assert.deepEqual((body.details as { path: string }[]).map((d) => d.path), [`filter.values.${code}.${op}`]);
        }
        await bad({ filter: { createdAt: { _contains: '2020' } } }, /createdAt/);
        await bad({ filter: { updatedAt: { _startsWith: '2020' } } }, /updatedAt/);
      });

      it('a comparison value of the wrong type or format', async () => {
        const cases: [string, string, unknown][] = [
          ['n', '_eq', '5'],
          ['n', '_gt', true],
          ['n', '_lt', [1]],
          ['flag', '_eq', 'true'],
          ['flag', '_eq', 1],
          ['name', '_eq', 5],
          ['name', '_gt', false],
          ['name', '_contains', 5],
          ['name', '_startsWith', ['a']],
          ['color', '_eq', 1],
          ['color', '_endsWith', { r: 1 }],
          ['day', '_eq', '2023-02-29'],
          ['day', '_gt', '2024-1-1'],
          ['day', '_lt', 20240101],
          ['at', '_gt', '2024-01-01'],
          ['at', '_eq', '2024-01-01T00:00:00'],
          ['at', '_lte', 'now'],
          ['clock', '_eq', '25:00:00'],
          ['clock', '_gte', '8:00:00'],
          ['month', '_eq', '2024-13'],
          ['month', '_lt', '2024-01-01'],
          ['tags', '_contains', { a: 1 }],
          ['tags', '_contains', [1]],
          ['n', '_isNull', 'yes'],
          ['tags', '_isNull', 1],
        ];
        for (const [code, op, value] of cases) {
          const body = await bad({ filter: v(code, { [op]: value }) }, new RegExp(`filter\\.values\\.${code}\\.${op}`));
          assert.equal((body.details as unknown[]).length, 1, `${code} ${op} ${JSON.stringify(value)}`);
        }
        await bad({ filter: { createdAt: { _gte: 'yesterday' } } }, /filter\.createdAt\._gte/);
        await bad({ filter: { id: { _eq: 1 } } }, /filter\.id\._eq/);
      });

      it('_eq: null (and any operator with null) points to _isNull', async () => {
        for (const [code, op] of [['n', '_eq'], ['name', '_eq'], ['name', '_contains'], ['day', '_gt'], ['tags', '_contains']]) {
          await bad({ filter: v(code, { [op]: null }) }, [new RegExp(`${code}\\.${op}`), /_isNull/]);
        }
        await bad({ filter: { createdBy: { _eq: null } } }, /_isNull/);
        await bad({ filter: v('n', { _isNull: null }) }, /_isNull/);
      });

      it('a comparison value with U+0000 is a 400 on both databases', async () => {
        await bad({ filter: v('name', { _eq: 'a\u0000' }) }, /filter\.values\.name\._eq/);
        await bad({ filter: v('name', { _contains: '\u0000' }) }, /filter\.values\.name\._contains/);
        await bad({ filter: v('tags', { _contains: '\u0000' }) }, /filter\.values\.tags\._contains/);
        await bad({ filter: { id: { _eq: 'x\u0000' } } }, /filter\.id\._eq/);
      });

      it('a filter nested too deep or too large, or too many sort keys, is a 400', async () => {
        let deep: Record<string, unknown> = v('n', { _eq: 1 });
        for (let i = 0; i < 40; i++) deep = { _not: deep };
        await bad({ filter: deep }, /filter/);
        const wide = { _or: Array.from({ length: 600 }, (_, i) => v('n', { _eq: i })) };
        await bad({ filter: wide }, /filter/);
        const keys = ['n', 'name', 'flag', 'at', 'day', 'clock', 'month', 'color', 'label', 'id'].map((k) => s(k, 'asc', 'nullsLast'));
        await bad({ sort: keys }, /sort/);
        // Within the limits: fine.
        let ok: Record<string, unknown> = v('n', { _eq: 1 });
        for (let i = 0; i < 7; i++) ok = { _not: { _not: ok } };
        assert.deepEqual(await filtered(ok), ['a']);
        assert.equal((await t.get(url, { query: { sort: keys.slice(0, 8) } })).status, 200);
      });

      it('a filter made large by empty filters, unknown keys or operators is one bounded 400, not a 500 (issue 17)', async () => {
        // 5,000 empty filters made an expression SQLite refuses (more than 1,000 terms deep): a 500.
        for (const filter of [{ _and: Array(5000).fill({}) }, { _or: Array(100_000).fill({}) }, { _or: Array(300).fill(v('n', { _eq: 1 })) }]) {
          const body = await bad({ filter }, /more than 500 parts/);
          assert.equal((body.details as unknown[]).length, 1);
        }
        for (const filter of [{ _or: Array(5000).fill(1) }, { values: Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`nope${i}`, { _eq: 1 }])) }, v('n', Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`_op${i}`, 1])))]) {
          const body = await bad({ filter }, /more than 500 parts/);
          assert.ok((body.details as unknown[]).length <= 501, `${(body.details as unknown[]).length} problems`);
        }
        // Just within: 1 + 249 × (a filter and its operator).
        assert.equal((await t.get(url, { query: { filter: { _or: Array(249).fill(v('n', { _eq: 1 })) } } })).status, 200);
        assert.equal((await t.get(url, { query: { filter: { _and: Array(499).fill({}) } } })).status, 200);
      });

      it('a comparison value nested deeper than the stack goes is a 400, not a 500 (issue 17)', async () => {
        const deep = '['.repeat(100_000) + ']'.repeat(100_000);
        for (const [code, op] of [['tags', '_contains'], ['name', '_eq'], ['n', '_gt']]) {
          const r = await t.get(`${url}?filter=${encodeURIComponent(`{"values":{"${code}":{"${op}":${deep}}}}`)}`);
          assert.match(String(expectError(r, 400).message), new RegExp(`filter\\.values\\.${code}\\.${op}`));
        }
      });

      it('every filter problem is reported at once', async () => {
        const filter = { values: { nope: { _eq: 1 }, n: { _eq: 'x', _bad: 1 }, flag: { _gt: true } }, ghost: {}, _or: [{ values: { day: { _eq: '2023-02-29' } } }] };
        const body = await bad({ filter }, [/nope/, /_bad/, /ghost/, /2023|day/]);
        assert.deepEqual(
          (body.details as { path: string }[]).map((d) => d.path).sort(),
          ['filter._or[0].values.day._eq', 'filter.ghost', 'filter.values.flag._gt', 'filter.values.n._bad', 'filter.values.n._eq', 'filter.values.nope'],
        );
      });

      it('a sort that is not an array of {key: {direction, nulls}}', async () => {
        await bad({ sort: {} }, /sort/);
        await bad({ sort: s('n', 'asc', 'nullsLast') }, /sort/);
        await bad({ sort: 'null' }, /sort/);
        await bad({ sort: ['n'] }, /sort\[0\]/);
        await bad({ sort: [{}] }, /sort\[0\]/);
        await bad({ sort: [{ ...s('n', 'asc', 'nullsLast'), ...s('day', 'asc', 'nullsLast') }] }, /sort\[0\]/);
        await bad({ sort: [{ n: { direction: 'asc' } }] }, /sort\[0\]\.n\.nulls/);
        await bad({ sort: [{ n: { nulls: 'nullsFirst' } }] }, /sort\[0\]\.n\.direction/);
        await bad({ sort: [{ n: {} }] }, [/direction/, /nulls/]);
        await bad({ sort: [{ n: 'asc' }] }, /sort\[0\]\.n/);
        await bad({ sort: [{ n: { direction: 'ascending', nulls: 'nullsLast' } }] }, /direction/);
        await bad({ sort: [{ n: { direction: 'ASC', nulls: 'nullsLast' } }] }, /direction/);
        await bad({ sort: [{ n: { direction: 'asc', nulls: 'first' } }] }, /nulls/);
        await bad({ sort: [{ n: { direction: 'asc', nulls: 'nullsLast', collate: 'C' } }] }, /collate/);
        await bad({ sort: [s('n', 'asc', 'nullsLast'), s('n', 'desc', 'nullsLast')] }, /sort\[1\]\.n/);
        await bad({ sort: [s('n', 'asc', 'nullsLast'), 5] }, /sort\[1\]/);
      });

      it('a sort on an unknown key or on a record, list or file field', async () => {
        for (const key of ['nope', 'created_at', 'values', 'Label']) await bad({ sort: [s(key, 'asc', 'nullsLast')] }, new RegExp(key));
        for (const key of ['meta', 'tags', 'file']) await bad({ sort: [s(key, 'asc', 'nullsLast')] }, new RegExp(`sort\\[0\\]\\.${key}`));
        await bad({ sort: [s('n', 'asc', 'nullsLast'), s('tags', 'desc', 'nullsFirst')] }, /sort\[1\]\.tags/);
      });

      async function nextUrlOf(query: Record<string, unknown>, path = url): Promise<URL> {
        const r = await t.get(path, { query: { pageSize: '2', ...query } });
        assert.equal(r.status, 200, r.text);
        assert.notEqual(r.body.nextUrl, null);
        return new URL(r.body.nextUrl);
      }

      it('a cursor used with another filter or sort', async () => {
        const filter = v('n', { _gte: -10 });
        const sort = [s('n', 'asc', 'nullsLast')];
        const next = await nextUrlOf({ filter, sort });
        const cursor = next.searchParams.get('cursor') as string;
        // As given: fine; with a different pageSize too.
        assert.equal((await t.get(pathOf(next.toString()))).status, 200);
        assert.equal((await t.get(url, { query: { filter, sort, cursor, pageSize: '3' } })).status, 200);
        for (const query of [
          { cursor },
          { cursor, filter },
          { cursor, sort },
          { cursor, filter: v('n', { _gte: -11 }), sort },
          { cursor, filter, sort: [s('n', 'asc', 'nullsFirst')] },
          { cursor, filter, sort: [s('n', 'desc', 'nullsLast')] },
          { cursor, filter, sort: [s('n', 'asc', 'nullsLast'), s('id', 'asc', 'nullsLast')] },
        ]) {
          await bad(query, /cursor/);
        }
        // And a default-order cursor used with a sort.
        const plain = (await nextUrlOf({})).searchParams.get('cursor') as string;
        await bad({ cursor: plain, sort: [s('createdAt', 'asc', 'nullsLast')] }, /cursor/);
      });

      it('an altered cursor: any one character changed', async () => {
        const next = await nextUrlOf({ sort: [s('name', 'asc', 'nullsFirst')] });
        const cursor = next.searchParams.get('cursor') as string;
        const sort = next.searchParams.get('sort') as string;
        assert.equal((await t.get(url, { query: { cursor, sort, pageSize: '2' } })).status, 200);
        // Flipping the lowest bit of a base64url character alters only padding bits at the end of a
        // part, which a lenient decoder ignores; flipping the highest alters real bits.
        const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
        for (let i = 0; i < cursor.length; i++) {
          const at = B64.indexOf(cursor[i]);
          const replacements = at < 0 ? ['A'] : [B64[at ^ 1], B64[at ^ 32]];
          for (const c of replacements) {
            const altered = cursor.slice(0, i) + c + cursor.slice(i + 1);
            const r = await t.get(url, { query: { cursor: altered, sort, pageSize: '2' } });
            const body = expectError(r, 400);
            assert.match(body.message as string, /cursor/, `position ${i}`);
          }
        }
        for (const garbage of ['', 'abc', 'a.b', `${cursor}.x`, `${cursor}x`, cursor.slice(0, -1), cursor.split('.')[0], '....']) {
          await bad({ cursor: garbage, sort, pageSize: '2' }, /cursor/);
        }
      });

      it('a cursor made before a sort field was replaced by one of another type is refused', async () => {
        const made = await makeTable('replaced', [{ code: 'a', type: 'number' }]);
        for (let i = 0; i < 3; i++) await t.post('/api/tables/replaced/rows', { values: { a: i } });
        const sort = [s('a', 'asc', 'nullsLast')];
        const next = await nextUrlOf({ sort, pageSize: '1' }, '/api/tables/replaced/rows');
        const put = await t.put(`/api/tables/${made.id}`, { fields: [{ code: 'a', type: 'date' }] });
        assert.equal(put.status, 200, put.text);
        const r = await t.get(next.pathname + next.search);
        assert.match(expectError(r, 400).message as string, /cursor/);
      });

      it('a cursor from another table', async () => {
        const other = await makeTable('others', [{ code: 'label', type: 'text' }, { code: 'n', type: 'number' }]);
        for (let i = 0; i < 3; i++) await t.post('/api/tables/others/rows', { values: { label: `o${i}`, n: i } });
        const plain = (await nextUrlOf({}, '/api/tables/others/rows')).searchParams.get('cursor') as string;
        await bad({ cursor: plain, pageSize: '2' }, /cursor/);
        const sort = [s('n', 'asc', 'nullsLast')];
        const sorted = (await nextUrlOf({ sort }, `/api/tables/${other.id}/rows`)).searchParams.get('cursor') as string;
        await bad({ cursor: sorted, sort, pageSize: '2' }, /cursor/);
        // The cursor works on its own table, named by code or id.
        assert.equal((await t.get(`/api/tables/${other.id}/rows`, { query: { cursor: plain, pageSize: '2' } })).status, 200);
      });

      it('unknown query parameters', async () => {
        for (const name of ['limit', 'offset', 'page', 'foo', 'PageSize', 'filters', 'order']) {
          const body = await bad({ [name]: '1' }, new RegExp(name));
          assert.deepEqual((body.details as { path: string }[]).map((d) => d.path), [name]);
        }
        await bad({ pageSize: '2', bogus: 'x', other: 'y' }, [/bogus/, /other/]);
      });

      it('every problem of the query in one 400: an unknown parameter hides none of the others', async () => {
        const body = await bad({ bogus: '1', pageSize: '0', filter: '{broken', sort: JSON.stringify([{ nope: { direction: 'asc', nulls: 'nullsLast' } }]) }, /bogus/);
        const paths = (body.details as { path: string }[]).map((d) => d.path);
        for (const p of ['bogus', 'pageSize', 'filter']) assert.ok(paths.includes(p), `${p} in ${paths.join(', ')}`);
        assert.ok(paths.some((p) => p.startsWith('sort[0]')), paths.join(', '));
      });

      it('repeated parameters', async () => {
        const filter = JSON.stringify(v('n', { _gt: 0 }));
        const sort = JSON.stringify([s('n', 'asc', 'nullsLast')]);
        const cursor = (await nextUrlOf({})).searchParams.get('cursor') as string;
        for (const pairs of [
          [['pageSize', '2'], ['pageSize', '2']],
          [['pageSize', '2'], ['pageSize', '3']],
          [['filter', filter], ['filter', filter]],
          [['sort', sort], ['sort', sort]],
          [['cursor', cursor], ['cursor', cursor]],
        ] as [string, string][][]) {
          const body = expectError(await t.get(withQuery(url, pairs)), 400);
          assert.match(body.message as string, new RegExp(pairs[0][0]));
        }
      });
    });
  });
});
