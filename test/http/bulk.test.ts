import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type Reply, type TestApp, allRows, eachDatabase, expectError, freshTable, startApp } from '../support/harness.ts';

/**
 * Bulk writes within one table (seed spec "Bulk"; CONTRACT §5, §7): POST /rows-bulk creates (with
 * upsert), PATCH updates, DELETE deletes; at most 1000 items, all or nothing, no repeated id.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const FIELDS = [
  { code: 'title', type: 'text', required: true },
  { code: 'qty', type: 'number' },
  { code: 'tag', type: 'text' },
  { code: 'done', type: 'boolean' },
];

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Row = Record<string, any>;


const detailPaths = (body: Record<string, unknown>) => ((body.details ?? []) as { path: string }[]).map((d) => d.path);

eachDatabase('rows: bulk create, update, delete', (kind) => {
  let t: TestApp;

  before(async () => {
    t = await startApp(kind);
  });
  after(() => t.close());

  /** A fresh table per test, so counts are exact. */
  const table = async () => (await freshTable(t, 'bulk', FIELDS)).code;
  const bulkUrl = (code: string) => `/api/tables/${code}/rows-bulk`;

  const dump = (code: string): Promise<Row[]> => allRows(t, code);

  async function getRow(code: string, id: string): Promise<Reply> {
    return t.get(`/api/tables/${code}/rows/${encodeURIComponent(id)}`);
  }

  async function seed(code: string, items: { id?: string; values: Record<string, unknown> }[]): Promise<Row[]> {
    const r = await t.post(bulkUrl(code), { data: items });
    assert.equal(r.status, 201, r.text);
    return r.body.data;
  }

  // ---------------------------------------------------------------- POST

  it('POST creates rows: 201, {data} in request order, generated and given ids, each row as GET returns it', async () => {
    const code = await table();
    const r = await t.post(bulkUrl(code), {
      data: [
        { values: { title: 'a', qty: 1 } },
        { id: 'given-1', values: { title: 'b', tag: 'x', done: true } },
        { values: { title: 'c' } },
        { id: 'given-0', values: { title: 'd', qty: null } },
      ],
    });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(Object.keys(r.body), ['data']);
    const data: Row[] = r.body.data;
    assert.equal(data.length, 4);
    assert.deepEqual(data.map((x) => x.values.title), ['a', 'b', 'c', 'd']);
    assert.match(data[0].id, UUID);
    assert.match(data[2].id, UUID);
    assert.notEqual(data[0].id, data[2].id);
    assert.equal(data[1].id, 'given-1');
    assert.equal(data[3].id, 'given-0');
    assert.deepEqual(data[1].values, { title: 'b', qty: null, tag: 'x', done: true });
    assert.deepEqual(data[3].values, { title: 'd', qty: null, tag: null, done: null });
    for (const row of data) {
      assert.deepEqual(Object.keys(row).sort(), ['createdAt', 'createdBy', 'id', 'updatedAt', 'updatedBy', 'values']);
      assert.equal(row.createdBy, t.ownerId);
      const got = await getRow(code, row.id);
      assert.equal(got.status, 200, got.text);
      assert.deepEqual(got.body, row);
    }
    assert.equal((await dump(code)).length, 4);
  });

  it('POST with upsert updates existing rows partially and creates the others: 200 when any was updated, 201 when none was', async () => {
    const code = await table();
    const [a, b] = await seed(code, [
      { id: 'a', values: { title: 'A', qty: 1, tag: 'keep' } },
      { id: 'b', values: { title: 'B', qty: 2, tag: 'keep-b', done: false } },
    ]);
    const r = await t.post(bulkUrl(code), {
      data: [
        { id: 'new-1', values: { title: 'N1' } },
        { id: 'a', values: { qty: 10 } },
        { values: { title: 'generated' } },
        { id: 'b', values: { tag: null, done: true } },
      ],
      options: { upsert: true },
    });
    assert.equal(r.status, 200, r.text);
    const data: Row[] = r.body.data;
    assert.deepEqual(data.map((x) => x.id).slice(0, 2), ['new-1', 'a']);
    assert.match(data[2].id, UUID);
    assert.equal(data[3].id, 'b');
    // Partial: fields not given are kept.
    assert.deepEqual(data[1].values, { title: 'A', qty: 10, tag: 'keep', done: null });
    assert.deepEqual(data[3].values, { title: 'B', qty: 2, tag: null, done: true });
    assert.equal(data[1].createdAt, a.createdAt);
    assert.ok(Date.parse(data[1].updatedAt) > Date.parse(a.updatedAt));
    assert.equal(data[3].createdAt, b.createdAt);
    assert.deepEqual(data[0].values, { title: 'N1', qty: null, tag: null, done: null });
    for (const row of data) assert.deepEqual((await getRow(code, row.id)).body, row);
    assert.equal((await dump(code)).length, 4);

    // Upsert where nothing exists yet creates everything: 201.
    const fresh = await t.post(bulkUrl(code), { data: [{ id: 'new-2', values: { title: 'N2' } }], options: { upsert: true } });
    assert.equal(fresh.status, 201, fresh.text);
    assert.equal(fresh.body.data[0].id, 'new-2');
  });

  it('POST with upsert: an id that turns out to be new still needs its required fields (400, nothing written)', async () => {
    const code = await table();
    await seed(code, [{ id: 'a', values: { title: 'A' } }]);
    const before = await dump(code);
    const r = await t.post(bulkUrl(code), {
      data: [
        { id: 'a', values: { qty: 5 } },
        { id: 'fresh', values: { qty: 1 } },
      ],
      options: { upsert: true },
    });
    const body = expectError(r, 400);
    assert.match(body.message as string, /data\[1\]\.values\.title/);
    assert.deepEqual(await dump(code), before);
  });

  it('POST with an existing id and no upsert: 409 naming the item, nothing of the request written', async () => {
    const code = await table();
    await seed(code, [{ id: 'taken', values: { title: 'T', qty: 1 } }]);
    const before = await dump(code);
    for (const options of [undefined, { upsert: false }]) {
      const r = await t.post(bulkUrl(code), {
        data: [{ id: 'n1', values: { title: 'x' } }, { values: { title: 'y' } }, { id: 'taken', values: { title: 'z', qty: 9 } }],
        ...(options ? { options } : {}),
      });
      const body = expectError(r, 409);
      assert.match(body.message as string, /data\[2\]/);
      assert.match(body.message as string, /taken/);
      assert.deepEqual(await dump(code), before);
    }
  });

  it('POST takes 1000 items; 1001 is a 400 and writes nothing', async () => {
    const code = await table();
    const items = (n: number, p: string) => Array.from({ length: n }, (_, i) => ({ id: `${p}-${i}`, values: { title: `t${i}`, qty: i } }));
    const over = await t.post(bulkUrl(code), { data: items(1001, 'over') });
    const body = expectError(over, 400);
    assert.match(body.message as string, /1000/);
    assert.equal((await dump(code)).length, 0);

    const ok = await t.post(bulkUrl(code), { data: items(1000, 'ok') });
    assert.equal(ok.status, 201, ok.text.slice(0, 500));
    assert.equal(ok.body.data.length, 1000);
    assert.deepEqual(
      ok.body.data.map((x: Row) => x.id),
      items(1000, 'ok').map((x) => x.id),
    );
    assert.deepEqual(ok.body.data[999].values, { title: 't999', qty: 999, tag: null, done: null });
    const rows = await dump(code);
    assert.equal(rows.length, 1000);
    assert.equal(rows.find((x) => x.id === 'ok-500')?.values.qty, 500);
  });

  it('POST with a repeated id: 400 naming the repeat, nothing written', async () => {
    const code = await table();
    await seed(code, [{ id: 'keep', values: { title: 'K' } }]);
    const before = await dump(code);
    for (const options of [undefined, { upsert: true }]) {
      const r = await t.post(bulkUrl(code), {
        data: [{ id: 'r1', values: { title: 'a' } }, { id: 'r2', values: { title: 'b' } }, { id: 'r1', values: { title: 'c' } }],
        ...(options ? { options } : {}),
      });
      const body = expectError(r, 400);
      assert.match(body.message as string, /data\[2\]/);
      assert.deepEqual(await dump(code), before);
    }
  });

  it('POST with a validation failure at item 900: 400 naming data[900], nothing of the request remains', async () => {
    const code = await table();
    await seed(code, [{ id: 'pre', values: { title: 'P' } }]);
    const before = await dump(code);
    const items: Row[] = Array.from({ length: 1000 }, (_, i) => ({ values: { title: `t${i}`, qty: i } }));
    items[900] = { values: { title: 't900', qty: 'not a number' } };
    const r = await t.post(bulkUrl(code), { data: items });
    const body = expectError(r, 400);
    assert.match(body.message as string, /data\[900\]/);
    assert.ok(detailPaths(body).includes('data[900].values.qty'), JSON.stringify(body.details));
    assert.deepEqual(await dump(code), before);

    // A missing required field and an unknown field are reported the same way.
    items[900] = { values: { qty: 1, nope: 2 } };
    const r2 = expectError(await t.post(bulkUrl(code), { data: items }), 400);
    assert.deepEqual(detailPaths(r2).sort(), ['data[900].values.nope', 'data[900].values.title']);
    assert.deepEqual(await dump(code), before);
  });

  it('POST with a conflict at the last of 1000 items: 409, nothing of the request remains', async () => {
    const code = await table();
    await seed(code, [{ id: 'exists', values: { title: 'E', qty: 7 } }]);
    const before = await dump(code);
    const items: Row[] = Array.from({ length: 1000 }, (_, i) => ({ id: `i-${i}`, values: { title: `t${i}` } }));
    items[999] = { id: 'exists', values: { title: 'overwritten', qty: 0 } };
    const body = expectError(await t.post(bulkUrl(code), { data: items }), 409);
    assert.match(body.message as string, /data\[999\]/);
    assert.deepEqual(await dump(code), before);
  });

  it('POST refuses bad shapes with 400 and an unknown table with 404', async () => {
    const code = await table();
    const bad: unknown[] = [
      [],
      { data: {} },
      { data: 'x' },
      {},
      { data: [null] },
      { data: [{ id: 5, values: { title: 'a' } }] },
      { data: [{ id: '-bad', values: { title: 'a' } }] },
      { data: [{ title: 'a' }] },
      { data: [{ values: { title: 'a' } }], options: { upsert: 'yes' } },
      { data: [{ values: { title: 'a' } }], options: { other: true } },
      { data: [{ values: { title: 'a' } }], extra: 1 },
    ];
    for (const body of bad) expectError(await t.post(bulkUrl(code), body), 400);
    assert.equal((await dump(code)).length, 0);
    expectError(await t.post(bulkUrl('no_such_table'), { data: [{ values: { title: 'a' } }] }), 404);
  });

  it('empty arrays are no-ops: POST 201, PATCH 200 and DELETE 200, each with {data: []}', async () => {
    const code = await table();
    const p = await t.post(bulkUrl(code), { data: [] });
    assert.equal(p.status, 201, p.text);
    assert.deepEqual(p.body, { data: [] });
    const u = await t.patch(bulkUrl(code), { data: [] });
    assert.equal(u.status, 200, u.text);
    assert.deepEqual(u.body, { data: [] });
    const d = await t.delete(bulkUrl(code), { ids: [] });
    assert.equal(d.status, 200, d.text);
    assert.deepEqual(d.body, { data: [] });
  });

  // ---------------------------------------------------------------- PATCH

  it('PATCH updates partially: 200, {data} in request order, other fields and rows untouched', async () => {
    const code = await table();
    const seeded = await seed(code, [
      { id: 'p1', values: { title: 'one', qty: 1, tag: 't1' } },
      { id: 'p2', values: { title: 'two', qty: 2, tag: 't2' } },
      { id: 'p3', values: { title: 'three', qty: 3, tag: 't3' } },
    ]);
    const r = await t.patch(bulkUrl(code), {
      data: [
        { id: 'p3', values: { qty: 30 } },
        { id: 'p1', values: { tag: null, done: true } },
      ],
    });
    assert.equal(r.status, 200, r.text);
    const data: Row[] = r.body.data;
    assert.deepEqual(data.map((x) => x.id), ['p3', 'p1']);
    assert.deepEqual(data[0].values, { title: 'three', qty: 30, tag: 't3', done: null });
    assert.deepEqual(data[1].values, { title: 'one', qty: 1, tag: null, done: true });
    assert.equal(data[0].createdAt, seeded[2].createdAt);
    assert.ok(Date.parse(data[0].updatedAt) > Date.parse(seeded[2].updatedAt));
    for (const row of data) assert.deepEqual((await getRow(code, row.id)).body, row);
    assert.deepEqual((await getRow(code, 'p2')).body, seeded[1]);
  });

  it('PATCH with an unknown id: 404 naming its index, nothing changed', async () => {
    const code = await table();
    await seed(code, [
      { id: 'u1', values: { title: 'one', qty: 1 } },
      { id: 'u2', values: { title: 'two', qty: 2 } },
    ]);
    const before = await dump(code);
    const r = await t.patch(bulkUrl(code), {
      data: [
        { id: 'u1', values: { qty: 100 } },
        { id: 'u2', values: { qty: 200 } },
        { id: 'ghost', values: { qty: 300 } },
      ],
    });
    const body = expectError(r, 404);
    assert.match(body.message as string, /data\[2\]/);
    assert.match(body.message as string, /ghost/);
    assert.deepEqual(await dump(code), before);
  });

  it('PATCH with a repeated id, a required field set to null, or a bad shape: 400, nothing changed', async () => {
    const code = await table();
    await seed(code, [
      { id: 'v1', values: { title: 'one', qty: 1 } },
      { id: 'v2', values: { title: 'two', qty: 2 } },
    ]);
    const before = await dump(code);

    const rep = expectError(await t.patch(bulkUrl(code), { data: [{ id: 'v1', values: { qty: 5 } }, { id: 'v2', values: {} }, { id: 'v1', values: { qty: 6 } }] }), 400);
    assert.match(rep.message as string, /data\[2\]/);

    const nul = expectError(await t.patch(bulkUrl(code), { data: [{ id: 'v1', values: { qty: 5 } }, { id: 'v2', values: { title: null } }] }), 400);
    assert.ok(detailPaths(nul).includes('data[1].values.title'), JSON.stringify(nul));

    const bad: unknown[] = [
      { data: [{ values: { qty: 1 } }] },
      { data: [{ id: 'v1' }] },
      { data: [{ id: 'v1', values: { qty: 'x' } }] },
      { data: [{ id: 'v1', values: { nope: 1 } }] },
      { data: [{ id: 'v1', values: { qty: 1 }, options: { upsert: true } }] },
      { data: [{ id: 'v1', values: { qty: 1 } }], options: {} },
      { data: 'v1' },
      { ids: ['v1'] },
      { data: Array.from({ length: 1001 }, () => ({ id: 'v1', values: {} })) },
    ];
    for (const b of bad) expectError(await t.patch(bulkUrl(code), b), 400);
    assert.deepEqual(await dump(code), before);
  });

  // ---------------------------------------------------------------- DELETE

  it('DELETE removes the rows: 200, {data: [{id}]} in request order, other rows stay', async () => {
    const code = await table();
    await seed(code, ['d1', 'd2', 'd3', 'd4'].map((id) => ({ id, values: { title: id } })));
    const r = await t.delete(bulkUrl(code), { ids: ['d3', 'd1'] });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, { data: [{ id: 'd3' }, { id: 'd1' }] });
    expectError(await getRow(code, 'd1'), 404);
    expectError(await getRow(code, 'd3'), 404);
    assert.deepEqual((await dump(code)).map((x) => x.id), ['d2', 'd4']);
  });

  it('DELETE with an unknown id: 404 naming its index, nothing deleted', async () => {
    const code = await table();
    await seed(code, ['e1', 'e2'].map((id) => ({ id, values: { title: id } })));
    const before = await dump(code);
    const body = expectError(await t.delete(bulkUrl(code), { ids: ['e1', 'ghost', 'e2'] }), 404);
    assert.match(body.message as string, /ids\[1\]/);
    assert.deepEqual(await dump(code), before);
  });

  it('DELETE with a repeated id or a bad shape: 400, nothing deleted', async () => {
    const code = await table();
    await seed(code, ['f1', 'f2'].map((id) => ({ id, values: { title: id } })));
    const before = await dump(code);
    const rep = expectError(await t.delete(bulkUrl(code), { ids: ['f1', 'f2', 'f1'] }), 400);
    assert.match(rep.message as string, /ids\[2\]/);
    const bad: unknown[] = [
      {},
      ['f1'],
      { ids: 'f1' },
      { ids: [1] },
      { ids: [''] },
      { ids: [null] },
      { ids: [{ id: 'f1' }] },
      { ids: ['f1'], data: [] },
      { ids: Array.from({ length: 1001 }, (_, i) => `x${i}`) },
    ];
    for (const b of bad) expectError(await t.delete(bulkUrl(code), b), 400);
    assert.deepEqual(await dump(code), before);
  });

  it('DELETE takes 1000 ids at once', async () => {
    const code = await table();
    const ids = Array.from({ length: 1000 }, (_, i) => `g${i}`);
    await seed(code, ids.map((id) => ({ id, values: { title: id } })));
    await seed(code, [{ id: 'stay', values: { title: 'stay' } }]);
    const r = await t.delete(bulkUrl(code), { ids });
    assert.equal(r.status, 200, r.text.slice(0, 500));
    assert.equal(r.body.data.length, 1000);
    assert.deepEqual(r.body.data[999], { id: 'g999' });
    assert.deepEqual((await dump(code)).map((x) => x.id), ['stay']);
  });

  it('ids no row can have (U+0000, bad shape) are unknown rows, never a server error, in every bulk and batch path', async () => {
    const code = await table();
    await seed(code, [{ id: 'stay', values: { title: 'stay' } }]);
    for (const id of ['a\u0000b', ' lead', 'x'.repeat(200)]) {
      expectError(await t.patch(bulkUrl(code), { data: [{ id: 'stay', values: {} }, { id, values: {} }] }), 404);
      expectError(await t.delete(bulkUrl(code), { ids: ['stay', id] }), 404);
      for (const type of ['update', 'delete']) {
        const r = await t.post('/api/rows-batch', { operations: [{ type, tableId: code, id, ...(type === 'update' ? { values: {} } : {}) }] });
        expectError(r, 404);
      }
      const tableRef = await t.post('/api/rows-batch', { operations: [{ type: 'delete', tableId: `t\u0000${code}`, id: 'stay' }] });
      expectError(tableRef, 404);
    }
    assert.deepEqual((await dump(code)).map((x) => x.id), ['stay']);
  });

  it('write routes take no query parameters: one given is a 400 naming it, and nothing is written', async () => {
    const code = await table();
    const before = await dump(code);
    const cases: [string, string, unknown][] = [
      ['POST', `/api/tables/${code}/rows?upsert=true`, { values: { title: 'q' } }],
      ['PATCH', `/api/tables/${code}/rows/x?x=1`, { values: {} }],
      ['DELETE', `/api/tables/${code}/rows/x?force=1`, undefined],
      ['POST', `${bulkUrl(code)}?upsert=true`, { data: [{ values: { title: 'q' } }] }],
      ['PATCH', `${bulkUrl(code)}?a=b`, { data: [] }],
      ['DELETE', `${bulkUrl(code)}?a=b`, { ids: [] }],
      ['POST', '/api/rows-batch?dryRun=1', { operations: [{ type: 'create', tableId: code, values: { title: 'q' } }] }],
    ];
    for (const [method, url, body] of cases) {
      const r = await t.request(method as 'POST', url, { body });
      const err = expectError(r, 400);
      assert.match(err.message as string, /query parameter/, `${method} ${url}`);
    }
    assert.deepEqual(await dump(code), before);
  });
});
