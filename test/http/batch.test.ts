import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type TestApp, allRows, eachDatabase, expectError, startApp } from '../support/harness.ts';

/**
 * The cross-table batch POST /api/rows-batch (seed spec "Cross-table batch"; CONTRACT §7): the
 * operations run in order in one transaction, data[i] answers operations[i], and a failing
 * operation fails the whole request with its own status, `operations[i]: ` and `index: i`.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Row = Record<string, any>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Op = Record<string, any>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

eachDatabase('rows: cross-table batch', (kind) => {
  let t: TestApp;
  let seq = 0;

  before(async () => {
    t = await startApp(kind);
  });
  after(() => t.close());

  interface Pair {
    /** Table A: its code, and its id. */
    a: string;
    aId: string;
    b: string;
    bId: string;
  }

  /** Two fresh tables per test, so read-backs are exact. */
  async function tables(): Promise<Pair> {
    const n = ++seq;
    const ra = await t.post('/api/tables', {
      code: `ta_${n}`, name: 'A',
      fields: [{ code: 'title', type: 'text', required: true }, { code: 'qty', type: 'number' }],
    });
    assert.equal(ra.status, 201, ra.text);
    const rb = await t.post('/api/tables', {
      code: `tb_${n}`, name: 'B',
      fields: [{ code: 'name', type: 'text', required: true }, { code: 'ref', type: 'text' }],
    });
    assert.equal(rb.status, 201, rb.text);
    return { a: `ta_${n}`, aId: ra.body.id, b: `tb_${n}`, bId: rb.body.id };
  }

  const batch = (operations: unknown) => t.post('/api/rows-batch', { operations });

  const dump = (code: string): Promise<Row[]> => allRows(t, code);
  const dumpBoth = async (p: Pair) => ({ a: await dump(p.a), b: await dump(p.b) });

  async function seedA(p: Pair, rows: { id: string; values: Record<string, unknown> }[]): Promise<void> {
    const r = await t.post(`/api/tables/${p.a}/rows-bulk`, { data: rows });
    assert.equal(r.status, 201, r.text);
  }

  /** The failing batch answers with `status`, names operation `index`, and leaves both tables as they were. */
  async function failsAt(p: Pair, operations: Op[], status: number, index: number, also?: RegExp): Promise<Record<string, unknown>> {
    const before = await dumpBoth(p);
    const body = expectError(await batch(operations), status);
    assert.ok((body.message as string).startsWith(`operations[${index}]: `), `message: ${body.message}`);
    assert.equal(body.index, index, JSON.stringify(body));
    if (also) assert.match(body.message as string, also);
    assert.deepEqual(await dumpBoth(p), before);
    return body;
  }

  it('runs create, update and delete of the same row in order: data[i] answers operations[i], delete row null', async () => {
    const p = await tables();
    const r = await batch([
      { type: 'create', tableId: p.a, id: 'r1', values: { title: 'first', qty: 1 } },
      { type: 'update', tableId: p.a, id: 'r1', values: { qty: 2 } },
      { type: 'create', tableId: p.a, id: 'r2', values: { title: 'second' } },
      { type: 'update', tableId: p.a, id: 'r2', values: { title: 'second!' } },
      { type: 'delete', tableId: p.a, id: 'r1' },
    ]);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(Object.keys(r.body), ['data']);
    const data: { type: string; row: Row | null }[] = r.body.data;
    assert.deepEqual(data.map((d) => d.type), ['create', 'update', 'create', 'update', 'delete']);
    for (const d of data) assert.deepEqual(Object.keys(d).sort(), ['row', 'type']);
    assert.equal(data[0].row?.id, 'r1');
    assert.deepEqual(data[0].row?.values, { title: 'first', qty: 1 });
    assert.deepEqual(data[1].row?.values, { title: 'first', qty: 2 });
    assert.equal(data[1].row?.createdAt, data[0].row?.createdAt);
    assert.ok(Date.parse(data[1].row?.updatedAt) > Date.parse(data[0].row?.updatedAt));
    assert.deepEqual(data[3].row?.values, { title: 'second!', qty: null });
    assert.equal(data[4].row, null);
    expectError(await t.get(`/api/tables/${p.a}/rows/r1`), 404);
    const r2 = await t.get(`/api/tables/${p.a}/rows/r2`);
    assert.equal(r2.status, 200, r2.text);
    // The row of a result has exactly the shape of a single-row retrieval.
    assert.deepEqual(r2.body, data[3].row);
    assert.deepEqual((await dump(p.a)).map((x) => x.id), ['r2']);
  });

  it('writes to several tables, named by id or by code, in one request', async () => {
    const p = await tables();
    const r = await batch([
      { type: 'create', tableId: p.aId, values: { title: 'by id' } },
      { type: 'create', tableId: p.b, id: 'b1', values: { name: 'by code' } },
      { type: 'create', tableId: p.a, id: 'a2', values: { title: 'by code', qty: 3 } },
      { type: 'update', tableId: p.bId, id: 'b1', values: { ref: 'a2' } },
    ]);
    assert.equal(r.status, 200, r.text);
    const data: { type: string; row: Row }[] = r.body.data;
    assert.equal(data.length, 4);
    assert.match(data[0].row.id, UUID);
    assert.equal(data[0].row.createdBy, t.ownerId);
    assert.deepEqual(data[3].row.values, { name: 'by code', ref: 'a2' });
    const a = await dump(p.a);
    const b = await dump(p.b);
    assert.deepEqual(a.map((x) => x.id).sort(), [data[0].row.id, 'a2'].sort());
    assert.deepEqual(b, [data[3].row]);
    for (const row of a) assert.deepEqual(row, [data[0].row, data[2].row].find((x) => x.id === row.id));
  });

  it('an update of a row that does not exist: 404 at its index, nothing of the batch remains', async () => {
    const p = await tables();
    await seedA(p, [{ id: 'x', values: { title: 'X', qty: 1 } }]);
    await failsAt(p, [
      { type: 'create', tableId: p.b, id: 'b1', values: { name: 'n' } },
      { type: 'update', tableId: p.a, id: 'x', values: { qty: 99 } },
      { type: 'update', tableId: p.a, id: 'ghost', values: { qty: 5 } },
      { type: 'create', tableId: p.a, values: { title: 'after' } },
    ], 404, 2, /ghost/);
    // A delete of an unknown row is the same.
    await failsAt(p, [
      { type: 'delete', tableId: p.a, id: 'x' },
      { type: 'delete', tableId: p.a, id: 'ghost' },
    ], 404, 1, /ghost/);
  });

  it('an update of a row deleted earlier in the same batch: 404, and the delete is undone too', async () => {
    const p = await tables();
    await seedA(p, [{ id: 'x', values: { title: 'X', qty: 1 } }, { id: 'y', values: { title: 'Y' } }]);
    await failsAt(p, [
      { type: 'update', tableId: p.a, id: 'y', values: { qty: 2 } },
      { type: 'create', tableId: p.b, values: { name: 'n' } },
      { type: 'delete', tableId: p.a, id: 'x' },
      { type: 'update', tableId: p.a, id: 'x', values: { qty: 3 } },
    ], 404, 3);
    const x = await t.get(`/api/tables/${p.a}/rows/x`);
    assert.equal(x.status, 200, x.text);
    assert.deepEqual(x.body.values, { title: 'X', qty: 1 });
  });

  it('an unknown table in the middle: 404 at its index, nothing of the batch remains', async () => {
    const p = await tables();
    await failsAt(p, [
      { type: 'create', tableId: p.a, id: 'a1', values: { title: 'a' } },
      { type: 'create', tableId: p.b, id: 'b1', values: { name: 'b' } },
      { type: 'create', tableId: 'no_such_table', values: { title: 'z' } },
      { type: 'create', tableId: p.a, id: 'a2', values: { title: 'a' } },
    ], 404, 2, /no_such_table/);
    await failsAt(p, [
      { type: 'create', tableId: p.a, id: 'a1', values: { title: 'a' } },
      { type: 'delete', tableId: '00000000-0000-4000-8000-000000000000', id: 'a1' },
    ], 404, 1);
  });

  it('a duplicate id: 409 at its index, whether it exists already or was created earlier in the batch', async () => {
    const p = await tables();
    await seedA(p, [{ id: 'taken', values: { title: 'T', qty: 1 } }]);
    await failsAt(p, [
      { type: 'create', tableId: p.b, id: 'b1', values: { name: 'b' } },
      { type: 'update', tableId: p.a, id: 'taken', values: { qty: 2 } },
      { type: 'create', tableId: p.a, id: 'taken', values: { title: 'again' } },
    ], 409, 2, /taken/);
    await failsAt(p, [
      { type: 'create', tableId: p.b, id: 'b1', values: { name: 'b' } },
      { type: 'create', tableId: p.a, id: 'a1', values: { title: 'a' } },
      { type: 'create', tableId: p.b, id: 'b1', values: { name: 'b again' } },
    ], 409, 2, /b1/);
  });

  it('a validation error at operation 900 of 1000: 400 naming operations[900], nothing remains', async () => {
    const p = await tables();
    await seedA(p, [{ id: 'pre', values: { title: 'P' } }]);
    const ops: Op[] = Array.from({ length: 1000 }, (_, i) =>
      i % 2 === 0
        ? { type: 'create', tableId: p.a, id: `a${i}`, values: { title: `t${i}`, qty: i } }
        : { type: 'create', tableId: p.b, id: `b${i}`, values: { name: `n${i}` } });
    const good = ops.slice();
    ops[900] = { type: 'create', tableId: p.a, id: 'a900', values: { title: 't900', qty: 'many' } };
    const body = await failsAt(p, ops, 400, 900);
    assert.match(body.message as string, /operations\[900\]\.values\.qty/);
    // A required field missing is also a 400 there.
    ops[900] = { type: 'create', tableId: p.a, id: 'a900', values: { qty: 1 } };
    await failsAt(p, ops, 400, 900, /title/);
    // The same 1000 operations without the fault all apply.
    const ok = await batch(good);
    assert.equal(ok.status, 200, ok.text.slice(0, 500));
    assert.equal(ok.body.data.length, 1000);
    assert.equal(ok.body.data[999].row.id, 'b999');
    assert.equal((await dump(p.a)).length, 501);
    assert.equal((await dump(p.b)).length, 500);
  });

  it('an empty batch is 200 {data: []}; more than 1000 operations is a 400 that writes nothing', async () => {
    const p = await tables();
    const empty = await batch([]);
    assert.equal(empty.status, 200, empty.text);
    assert.deepEqual(empty.body, { data: [] });
    const ops = Array.from({ length: 1001 }, (_, i) => ({ type: 'create', tableId: p.a, values: { title: `t${i}` } }));
    const body = expectError(await batch(ops), 400);
    assert.match(body.message as string, /1000/);
    assert.equal((await dump(p.a)).length, 0);
  });

  it('malformed operations: 400 naming the index, nothing of the batch remains', async () => {
    const p = await tables();
    await seedA(p, [{ id: 'x', values: { title: 'X' } }]);
    const first = { type: 'create', tableId: p.b, values: { name: 'first' } };
    const cases: [Op | unknown, RegExp][] = [
      [{ type: 'upsert', tableId: p.a, values: { title: 'a' } }, /type/],
      [{ tableId: p.a, values: { title: 'a' } }, /type/],
      [{ type: 'create', values: { title: 'a' } }, /tableId/],
      [{ type: 'update', id: 'x', values: { qty: 1 } }, /tableId/],
      [{ type: 'delete', tableId: '', id: 'x' }, /tableId/],
      [{ type: 'update', tableId: p.a, values: { qty: 1 } }, /id/],
      [{ type: 'delete', tableId: p.a }, /id/],
      [{ type: 'create', tableId: p.a, id: 'new' }, /values/],
      [{ type: 'update', tableId: p.a, id: 'x' }, /values/],
      [{ type: 'update', tableId: p.a, id: 'x', values: { title: null } }, /title/],
      [{ type: 'update', tableId: p.a, id: 'x', values: { nope: 1 } }, /nope/],
      [{ type: 'create', tableId: p.a, values: { title: 'a' }, extra: 1 }, /extra/],
      [{ type: 'delete', tableId: p.a, id: 'x', values: {} }, /values/],
      [{ type: 'create', tableId: p.a, values: { title: 'a' }, options: { upsert: 'yes' } }, /upsert/],
      [null, /./],
      ['create', /./],
    ];
    for (const [op, re] of cases) {
      await failsAt(p, [first, op as Op], 400, 1, re);
    }
    // The body itself must be {operations: [...]}.
    for (const body of [{}, { operations: {} }, { operations: 'x' }, [], { operations: [], extra: 1 }]) {
      expectError(await t.post('/api/rows-batch', body), 400);
    }
    assert.deepEqual((await dump(p.b)).length, 0);
  });

  it('a create with options.upsert updates an existing row partially; without it the id is a 409', async () => {
    const p = await tables();
    await seedA(p, [{ id: 'u', values: { title: 'U', qty: 1 } }]);
    const r = await batch([
      { type: 'create', tableId: p.a, id: 'u', values: { qty: 2 }, options: { upsert: true } },
      { type: 'create', tableId: p.a, id: 'v', values: { title: 'V' }, options: { upsert: true } },
      { type: 'create', tableId: p.a, id: 'v', values: { qty: 7 }, options: { upsert: true } },
    ]);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.data.map((d: { type: string }) => d.type), ['create', 'create', 'create']);
    assert.deepEqual(r.body.data[0].row.values, { title: 'U', qty: 2 });
    assert.deepEqual(r.body.data[2].row.values, { title: 'V', qty: 7 });
    assert.deepEqual((await dump(p.a)).map((x) => [x.id, x.values]), [['u', { title: 'U', qty: 2 }], ['v', { title: 'V', qty: 7 }]]);
    // An upsert that creates still needs the required fields.
    await failsAt(p, [{ type: 'create', tableId: p.a, id: 'w', values: { qty: 1 }, options: { upsert: true } }], 400, 0, /title/);
    await failsAt(p, [{ type: 'create', tableId: p.a, id: 'u', values: { title: 'again', qty: 3 }, options: { upsert: false } }], 409, 0, /\bu\b/);
  });

  it('a run of creates in one table fails at the first operation that would fail, whether invalid or a taken id', async () => {
    const p = await tables();
    await seedA(p, [{ id: 'taken', values: { title: 'seed' } }]);
    const creates = (n: number): Op[] => Array.from({ length: n }, (_, i) => ({ type: 'create', tableId: p.a, id: `r${i}`, values: { title: `t${i}` } }));
    // A taken id at 3 comes before an invalid value at 5.
    const takenFirst = creates(8);
    takenFirst[3].id = 'taken';
    takenFirst[5].values = { title: 42 };
    await failsAt(p, takenFirst, 409, 3, /taken/);
    // An invalid value at 2 comes before a repeated id at 6.
    const invalidFirst = creates(8);
    invalidFirst[2].values = {};
    invalidFirst[6].id = 'r1';
    await failsAt(p, invalidFirst, 400, 2);
    // A repeated id within the run fails at its second use.
    const repeated = creates(8);
    repeated[4].id = 'r0';
    await failsAt(p, repeated, 409, 4, /r0/);
    // The whole run, then an update of one of its rows, succeeds in order.
    const ok = await batch([...creates(5), { type: 'update', tableId: p.a, id: 'r2', values: { qty: 7 } }]);
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(ok.body.data.map((d: Row) => d.row.id), ['r0', 'r1', 'r2', 'r3', 'r4', 'r2']);
    assert.equal(ok.body.data[5].row.values.qty, 7);
  });
});
