import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type TestApp, eachDatabase, freshTable, startApp } from '../support/harness.ts';

/**
 * Single-row writes and their change entries (on PostgreSQL one statement each: the write, its
 * guard, and the entry's insert taking its number from both, postgres/change-numbering.ts
 * withEntry): a write that matches no row takes no number and writes no entry; each committed
 * write has its own entry, numbered in the order the writes of one row committed; a patch racing
 * the row's delete either comes before it (its entry too) or is a 404 with no entry.
 */

interface Change {
  sequence: number;
  type: string;
  rowId: string;
  row: Record<string, any> | null;
  changedFields: string[] | null;
}

eachDatabase('changes: single-row writes and their entries', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(kind);
  });
  after(() => t.close());

  const table = async () => (await freshTable(t, 's', [{ code: 'title', type: 'text' }, { code: 'amount', type: 'number' }, { code: 'meta', type: 'record' }])).code;
  async function feed(code: string): Promise<Change[]> {
    const r = await t.get(`/api/tables/${code}/changes`, { query: { limit: '1000' } });
    assert.equal(r.status, 200, r.text);
    return r.body.data as Change[];
  }

  it('writes that match no row take no number: the numbers of those that do follow on', async () => {
    const code = await table();
    const created = await t.post(`/api/tables/${code}/rows`, { id: 'r1', values: { title: 'one', amount: 1, meta: { b: 1, a: [2] } } });
    assert.equal(created.status, 201, created.text);
    assert.equal((await t.patch(`/api/tables/${code}/rows/absent`, { values: { amount: 2 } })).status, 404);
    assert.equal((await t.delete(`/api/tables/${code}/rows/absent`)).status, 404);
    const patched = await t.patch(`/api/tables/${code}/rows/r1`, { values: { amount: 3 } });
    assert.equal(patched.status, 200, patched.text);
    assert.equal((await t.patch(`/api/tables/${code}/rows/absent`, { values: { title: 'x' } })).status, 404);
    assert.equal((await t.delete(`/api/tables/${code}/rows/r1`)).status, 204);
    const changes = await feed(code);
    const first = changes[0].sequence;
    assert.deepEqual(
      changes.map((c) => [c.sequence - first, c.type, c.rowId, c.changedFields]),
      [
        [0, 'create', 'r1', null],
        [1, 'update', 'r1', ['amount']],
        [2, 'delete', 'r1', null],
      ],
    );
    // The entries hold the rows the answers gave, in the record's shape.
    assert.deepEqual(changes[0].row, created.body);
    assert.deepEqual(changes[1].row, patched.body);
    assert.deepEqual(Object.keys(patched.body), ['id', 'createdAt', 'updatedAt', 'createdBy', 'updatedBy', 'values']);
    assert.deepEqual(patched.body.values, { title: 'one', amount: 3, meta: { b: 1, a: [2] } });
    assert.equal(changes[2].row, null);
  });

  it('concurrent patches of one row: each its own entry, numbered in the order they committed', async () => {
    const code = await table();
    assert.equal((await t.post(`/api/tables/${code}/rows`, { id: 'hot', values: { amount: 0 } })).status, 201);
    const n = 30;
    const answers = await Promise.all(Array.from({ length: n }, (_, i) => t.patch(`/api/tables/${code}/rows/hot`, { values: { amount: i + 1 } })));
    for (const a of answers) assert.equal(a.status, 200, a.text);
    const updates = (await feed(code)).filter((c) => c.type === 'update');
    assert.equal(updates.length, n);
    // One entry per answer: the same (amount, updatedAt) pairs.
    const key = (row: Record<string, any>) => `${row.values.amount}@${row.updatedAt}`;
    assert.deepEqual(updates.map((c) => key(c.row as Record<string, any>)).sort(), answers.map((a) => key(a.body)).sort());
    // A row's writes take turns (its lock), and each moves updatedAt on: numbers follow that order.
    for (let i = 1; i < n; i++) {
      assert.ok(updates[i].sequence > updates[i - 1].sequence);
      assert.ok((updates[i].row?.updatedAt as string) > (updates[i - 1].row?.updatedAt as string), `entry ${i} after entry ${i - 1}`);
    }
    const now = await t.get(`/api/tables/${code}/rows/hot`);
    assert.deepEqual(updates.at(-1)?.row, now.body);
  });

  it('a patch racing the delete of its row: before it, with its entry, or a 404 with none', async () => {
    const code = await table();
    const rows = 20;
    for (let i = 0; i < rows; i++) assert.equal((await t.post(`/api/tables/${code}/rows`, { id: `d${i}`, values: { amount: i } })).status, 201);
    const results = await Promise.all(
      Array.from({ length: rows }, async (_, i) => {
        const [patch, del] = await Promise.all([t.patch(`/api/tables/${code}/rows/d${i}`, { values: { amount: -i } }), t.delete(`/api/tables/${code}/rows/d${i}`)]);
        return { patch: patch.status, del: del.status };
      }),
    );
    const changes = await feed(code);
    let updated = 0;
    for (const [i, r] of results.entries()) {
      assert.equal(r.del, 204);
      assert.ok(r.patch === 200 || r.patch === 404, String(r.patch));
      const types = changes.filter((c) => c.rowId === `d${i}`).map((c) => c.type);
      assert.deepEqual(types, r.patch === 200 ? ['create', 'update', 'delete'] : ['create', 'delete'], `row d${i}`);
      if (r.patch === 200) updated++;
    }
    assert.equal(changes.filter((c) => c.type === 'update').length, updated);
    // Numbers stay dense: no write that found no row took one.
    assert.deepEqual(
      changes.map((c) => c.sequence - changes[0].sequence),
      changes.map((_, k) => k),
    );
  });
});
