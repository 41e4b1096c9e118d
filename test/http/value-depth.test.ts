import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';

/**
 * Bounded nesting (issue 17, item 3): a list or record value nests at most 64 levels of arrays and
 * objects, a JSON body at most 100, each refused with a 400 that names where. SQLite's JSON
 * functions stop at 1,000 levels: a deeper stored value made every `_contains` filter on its field
 * a 500. Filters and sorts have their bounds too.
 */

/** A list nested `depth` levels: [[[…["x"]…]]] (depth 1 is ["x"]). */
function nestedList(depth: number): unknown {
  let v: unknown = ['x'];
  for (let i = 1; i < depth; i++) v = [v];
  return v;
}

/** A record nested `depth` levels: {"a": {"a": … {"leaf": 1}}}. */
function nestedRecord(depth: number): unknown {
  let v: unknown = { leaf: 1 };
  for (let i = 1; i < depth; i++) v = { a: v };
  return v;
}

/** JSON text of a list nested `depth` levels, built as text (a value that deep cannot be stringified). */
const deepListText = (depth: number) => `${'['.repeat(depth)}"x"${']'.repeat(depth)}`;

eachDatabase('nesting depth of values, bodies and filters', (kind) => {
  let t: TestApp;

  before(async () => {
    t = await startApp(kind);
    const made = await t.post('/api/tables', {
      code: 'deep',
      name: 'Deep',
      fields: [
        { code: 'tags', type: 'list' },
        { code: 'doc', type: 'record' },
        { code: 'title', type: 'text' },
      ],
    });
    assert.equal(made.status, 201, made.text);
  });
  after(() => t.close());

  const rows = '/api/tables/deep/rows';
  const contains = (value: string) => t.get(rows, { query: { filter: { values: { tags: { _contains: value } } } } });

  describe('list and record values', () => {
    it('64 levels are stored and read back; the _contains filter and an export with it work', async () => {
      const created = await t.post(rows, { id: 'd64', values: { tags: ['x', nestedList(63)], doc: nestedRecord(64) } });
      assert.equal(created.status, 201, created.text);
      const read = await t.get(`${rows}/d64`);
      assert.deepEqual(read.body.values.tags, ['x', nestedList(63)]);
      assert.deepEqual(read.body.values.doc, nestedRecord(64));
      const found = await contains('x');
      assert.equal(found.status, 200, found.text);
      assert.deepEqual(found.body.data.map((r: { id: string }) => r.id), ['d64']);
      const exported = await t.get('/api/tables/deep/rows-export', {
        query: { format: 'jsonl', encoding: 'utf8', newline: 'lf', filter: { values: { tags: { _contains: 'x' } } } },
      });
      assert.equal(exported.status, 200, exported.text);
      assert.equal(exported.text.trim().split('\n').length, 1);
      assert.equal((await t.delete(`${rows}/d64`)).status, 204);
    });

    it('65 levels: a 400 naming the field, and nothing stored', async () => {
      for (const values of [{ tags: nestedList(65) }, { doc: nestedRecord(65) }, { tags: [{ a: nestedList(64) }] }]) {
        const r = await t.post(rows, { id: 'd65', values });
        const body = expectError(r, 400);
        const code = Object.keys(values)[0];
        assert.deepEqual(body.details, [{ path: `values.${code}`, message: 'nests more than 64 levels of arrays and objects' }]);
        assert.match(body.message as string, new RegExp(`values\\.${code}: nests more than 64 levels`));
      }
      expectError(await t.get(`${rows}/d65`), 404);
    });

    it('1,001 levels (past what SQLite JSON functions take) is refused, and filters on the field keep working', async () => {
      const r = await t.request('POST', rows, { raw: `{"id":"d1001","values":{"tags":${deepListText(1001)}}}`, headers: { 'content-type': 'application/json' } });
      expectError(r, 400);
      const found = await contains('x');
      assert.equal(found.status, 200, found.text);
    });

    it('every write path checks it: update, upsert, bulk, batch', async () => {
      assert.equal((await t.post(rows, { id: 'w1', values: { title: 'w' } })).status, 201);
      const deep = nestedList(65);
      const patched = expectError(await t.patch(`${rows}/w1`, { values: { tags: deep } }), 400);
      assert.deepEqual(patched.details, [{ path: 'values.tags', message: 'nests more than 64 levels of arrays and objects' }]);
      const upserted = expectError(await t.post(rows, { id: 'w1', values: { tags: deep }, options: { upsert: true } }), 400);
      assert.match(upserted.message as string, /values\.tags: nests more than 64/);
      const bulk = expectError(await t.post('/api/tables/deep/rows-bulk', { data: [{ id: 'b1', values: {} }, { id: 'b2', values: { doc: nestedRecord(65) } }] }), 400);
      assert.deepEqual(bulk.details, [{ path: 'data[1].values.doc', message: 'nests more than 64 levels of arrays and objects' }]);
      const bulkPatch = expectError(await t.patch('/api/tables/deep/rows-bulk', { data: [{ id: 'w1', values: { tags: deep } }] }), 400);
      assert.match(bulkPatch.message as string, /data\[0\]\.values\.tags: nests more than 64/);
      const batch = expectError(
        await t.post('/api/rows-batch', { operations: [{ type: 'update', tableId: 'deep', id: 'w1', values: { tags: deep } }] }),
        400,
      );
      assert.match(batch.message as string, /^operations\[0\]: .*values\.tags: nests more than 64/);
      assert.equal((await t.get(`${rows}/w1`)).body.values.tags, null);
      assert.equal((await t.delete(`${rows}/w1`)).status, 204);
    });

    it('an import names the line: a JSONL value 65 deep, one 100,000 deep, a CSV cell 65 deep', async () => {
      const importFile = (format: string, text: string) =>
        t.request('POST', `/api/tables/deep/rows-import?format=${format}&encoding=utf8`, { raw: text, headers: { 'content-type': 'text/plain' } });
      const ok = '{"id":"i1","values":{"title":"fine"}}';
      for (const depth of [65, 100_000]) {
        const r = await importFile('jsonl', `${ok}\n{"id":"i2","values":{"tags":${deepListText(depth)}}}\n`);
        const body = expectError(r, 400);
        assert.match(body.message as string, /line 2, column tags: nests more than 64 levels/);
      }
      const cell = `"${deepListText(65).replaceAll('"', '""')}"`; // a CSV cell holding the JSON text, quoted
      const csv = expectError(await importFile('csv', `id,tags\ni3,${cell}\n`), 400);
      assert.match(csv.message as string, /line 2.*tags.*nests more than 64 levels/);
      const listed = await t.get(rows);
      assert.deepEqual(listed.body.data, [], 'nothing imported');
    });
  });

  describe('JSON bodies', () => {
    it('more than 100 levels anywhere in a body is a 400 that names where', async () => {
      let definition: unknown = { leaf: true };
      for (let i = 0; i < 150; i++) definition = { next: definition };
      const flow = expectError(await t.post('/api/flows', { name: 'deep', definition }), 400);
      assert.match(flow.message as string, /^The JSON body nests more than 100 levels of arrays and objects, at definition\.next\.next/);
      assert.deepEqual((await t.get('/api/flows')).body.data, []);
    });

    it('a body 200,000 levels deep is a 400, not a fault, and names the field', async () => {
      const r = await t.request('POST', rows, { raw: `{"id":"huge","values":{"tags":${deepListText(200_000)}}}`, headers: { 'content-type': 'application/json' } });
      const body = expectError(r, 400);
      assert.match(body.message as string, /at values\.tags\[0\]/);
      const env = await t.request('POST', '/api/environment-variables', {
        raw: `{"name":"DEEP","value":"v","description":${deepListText(200_000)}}`,
        headers: { 'content-type': 'application/json' },
      });
      expectError(env, 400);
      const many = await t.request('POST', '/api/members/create-many', { raw: `[${deepListText(200_000)}]`, headers: { 'content-type': 'application/json' } });
      assert.match(expectError(many, 400).message as string, /at \[0\]\[0\]/);
    });
  });

  describe('filters and sorts', () => {
    const bad = async (query: Record<string, unknown>) => expectError(await t.get(rows, { query }), 400);

    it('a filter nested more than 16 levels deep', async () => {
      let filter: Record<string, unknown> = { values: { title: { _eq: 'a' } } };
      for (let i = 0; i < 17; i++) filter = { _not: filter };
      const body = await bad({ filter });
      assert.equal((body.details as { message: string }[])[0].message, 'is nested more than 16 levels deep');
      let ok: Record<string, unknown> = { values: { title: { _eq: 'a' } } };
      for (let i = 0; i < 16; i++) ok = { _not: ok };
      assert.equal((await t.get(rows, { query: { filter: ok } })).status, 200);
    });

    it('a filter of more than 500 parts is one 400, said once', async () => {
      // Each item is two parts (its filter object and its operator), the whole filter one more.
      const wide = { _or: Array.from({ length: 250 }, (_, i) => ({ values: { title: { _eq: `t${i}` } } })) };
      const body = await bad({ filter: wide });
      // Said where the 501st part is, and only there.
      assert.deepEqual(body.details, [{ path: 'filter._or[249].values.title', message: 'has more than 500 parts (filters and operators)' }]);
      const fine = { _or: Array.from({ length: 249 }, (_, i) => ({ values: { title: { _eq: `t${i}` } } })) };
      assert.equal((await t.get(rows, { query: { filter: fine } })).status, 200);
    });

    it('the fields of one `values` count as parts too, known or not', async () => {
      const values: Record<string, unknown> = {};
      for (let i = 0; i < 501; i++) values[`f${i}`] = { _eq: 1 };
      const body = await bad({ filter: { values } });
      // Each unknown field is named, up to the limit, which is said once.
      const details = body.details as { message: string }[];
      assert.equal(details.filter((d) => d.message === 'has more than 500 parts (filters and operators)').length, 1);
      assert.ok(details.length <= 501, String(details.length));
    });

    it('a sort of more than 8 keys', async () => {
      const key = (k: string) => ({ [k]: { direction: 'asc', nulls: 'nullsLast' } });
      const body = await bad({ sort: ['title', 'id', 'createdAt', 'updatedAt', 'createdBy', 'updatedBy', 'title', 'id', 'createdAt'].map(key) });
      assert.deepEqual(body.details, [{ path: 'sort', message: 'has more than 8 conditions' }]);
    });

    it('a flow trigger filter has the same bounds (in a body)', async () => {
      const wide = { _or: Array.from({ length: 250 }, (_, i) => ({ values: { title: { _eq: `t${i}` } } })) };
      const r = await t.post('/api/flows', {
        name: 'wide',
        definition: { trigger: { table: 'deep', events: ['create'], filter: wide }, webhook: { url: 'https://example.com/hook' } },
      });
      const body = expectError(r, 400);
      assert.match(body.message as string, /has more than 500 parts/);
    });
  });
});
