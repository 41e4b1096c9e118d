import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type TestApp, eachDatabase, startApp } from '../support/harness.ts';
import { EVERY_TYPE_FIELDS } from '../support/every-type.ts';

/**
 * A PATCH's answer is the row as a GET then reads it, to the byte, for every field type (on
 * PostgreSQL the update of a table without file or link fields returns the record its change entry
 * keeps, and the answer is made from it: store/record-row.ts), and the entry holds that row.
 */

/** Values whose spelling could differ between the database's rendering and the service's. */
const TRICKY = [
  {
    title: 'quote " backslash \\ tab \t newline \n \u0001 \u2028 é 請求書 😀 </script>',
    amount: 1e21,
    done: true,
    at: '2024-05-01T11:30:00.5+02:00',
    day: '2024-02-29',
    clock: '23:59:59',
    month: '2024-12',
    color: 'green',
    meta: { zeta: 1, a: { b: [1, 'two', null, 2.5, 0, 1e-7] }, longer_key: 'x', c: true, '': 'empty key', 'q"k': '\\' },
    tags: ['x', 2, { y: false, aa: [] }, ['nested'], 12345678901234567890, 0.1],
  },
  { title: 'small', amount: -0.000001, done: false, meta: {}, tags: [] },
  { title: 'nulls', amount: null, done: null, at: null, day: null, clock: null, month: null, color: null, meta: null, tags: null },
  { title: 'big', amount: 1.7976931348623157e308, meta: { n: -1.5e-300 }, tags: [9007199254740993] },
];

eachDatabase('rows: a patch answers the row as read back', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(kind);
    const r = await t.post('/api/tables', { code: 'every', name: 'Every', fields: EVERY_TYPE_FIELDS });
    assert.equal(r.status, 201, r.text);
  });
  after(() => t.close());

  it("for every field type, the PATCH's text is the GET's, and the change entry holds the same row", async () => {
    const created = await t.post('/api/tables/every/rows', { id: 'p1', values: { title: 'start', amount: 1, meta: { k: 1 }, tags: [1] } });
    assert.equal(created.status, 201, created.text);
    for (const [k, values] of TRICKY.entries()) {
      const patched = await t.patch('/api/tables/every/rows/p1', { values });
      assert.equal(patched.status, 200, patched.text);
      const got = await t.get('/api/tables/every/rows/p1');
      assert.equal(got.status, 200, got.text);
      assert.equal(patched.text, got.text, `patch ${k}`);
      assert.equal(patched.body.updatedBy, t.ownerId);
      assert.equal(patched.body.createdAt, created.body.createdAt);
      for (const [code, v] of Object.entries(values)) if (code !== 'at') assert.deepEqual(patched.body.values[code], v, `${code} of patch ${k}`);
    }
    const feed = await t.get('/api/tables/every/changes', { query: { limit: '100' } });
    assert.equal(feed.status, 200, feed.text);
    const updates = (feed.body.data as { type: string; row: unknown; changedFields: string[] }[]).filter((c) => c.type === 'update');
    assert.equal(updates.length, TRICKY.length);
    const last = await t.get('/api/tables/every/rows/p1');
    assert.deepEqual(updates.at(-1)?.row, last.body);
    assert.deepEqual(updates.at(-1)?.changedFields, Object.keys(TRICKY.at(-1) as object));
  });

  it('a patch of a row that is not there is a 404 and writes no entry', async () => {
    const before = await t.get('/api/tables/every/changes', { query: { limit: '1000' } });
    const r = await t.patch('/api/tables/every/rows/absent', { values: { amount: 2 } });
    assert.equal(r.status, 404, r.text);
    const after = await t.get('/api/tables/every/changes', { query: { limit: '1000' } });
    assert.equal(after.body.data.length, before.body.data.length);
  });
});
