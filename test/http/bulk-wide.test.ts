import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type TestApp, allRows, eachDatabase, expectError, freshTable, startApp } from '../support/harness.ts';

/**
 * A bulk create of 1,000 rows into a table of 60 fields: more rows than one multi-row VALUES
 * insert may bind (dialect.rowsPerInsert: 30,000 values, 461 rows of 65 columns on PostgreSQL),
 * which PostgreSQL writes with their entries as one statement of one array per column
 * (store/rows.ts insertMany, ChangeLog.insertWithEntries). The rows, their order, their entries'
 * order and a conflict's index past the old boundaries hold as for any bulk.
 */

const WIDTH = 60;
const FIELDS = Array.from({ length: WIDTH }, (_, k) => (k % 3 === 0 ? { code: `t${k}`, type: 'text' } : k % 3 === 1 ? { code: `n${k}`, type: 'number' } : { code: `m${k}`, type: 'record' }));

/** Row i's values: every field set. */
const valuesOf = (i: number) =>
  Object.fromEntries(FIELDS.map((f, k) => [f.code, f.type === 'text' ? `row ${i} field ${k} "q" é` : f.type === 'number' ? i * 1000 + k + 0.5 : { i, k, s: `v${i}` }]));

eachDatabase('rows: bulk create of a wide table', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(kind);
  });
  after(() => t.close());

  const table = async () => (await freshTable(t, 'wide', FIELDS)).code;

  it('1,000 rows of 60 fields: answered in order as GET reads them, their create entries numbered in that order', async () => {
    const code = await table();
    const data = Array.from({ length: 1000 }, (_, i) => ({ id: `w-${String(i).padStart(4, '0')}`, values: valuesOf(i) }));
    const r = await t.post(`/api/tables/${code}/rows-bulk`, { data });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(
      r.body.data.map((row: { id: string }) => row.id),
      data.map((d) => d.id),
    );
    for (const i of [0, 460, 461, 462, 922, 923, 999]) {
      assert.deepEqual(r.body.data[i].values, data[i].values, `row ${i}`);
      const got = await t.get(`/api/tables/${code}/rows/${data[i].id}`);
      assert.deepEqual(got.body, r.body.data[i], `row ${i} read back`);
    }
    const entries: { sequence: number; type: string; rowId: string; row: unknown }[] = [];
    let after: number | undefined;
    for (;;) {
      const page = await t.get(`/api/tables/${code}/changes`, { query: { limit: '1000', ...(after === undefined ? {} : { after: String(after) }) } });
      assert.equal(page.status, 200, page.text);
      if (page.body.data.length === 0) break;
      entries.push(...page.body.data);
      after = page.body.nextCursor;
    }
    assert.deepEqual(
      entries.map((e) => [e.type, e.rowId]),
      data.map((d) => ['create', d.id]),
    );
    for (let k = 1; k < entries.length; k++) assert.ok(entries[k].sequence > entries[k - 1].sequence);
    assert.deepEqual(entries[999].row, r.body.data[999]);
  });

  it('a conflict at item 950 of 1,000: 409 naming it, nothing of the request written', async () => {
    const code = await table();
    const seeded = await t.post(`/api/tables/${code}/rows`, { id: 'taken', values: valuesOf(-1) });
    assert.equal(seeded.status, 201, seeded.text);
    const data = Array.from({ length: 1000 }, (_, i) => ({ id: i === 950 ? 'taken' : `c-${i}`, values: valuesOf(i) }));
    const body = expectError(await t.post(`/api/tables/${code}/rows-bulk`, { data }), 409);
    assert.match(body.message as string, /data\[950\]/);
    assert.deepEqual(
      (await allRows(t, code)).map((row) => row.id),
      ['taken'],
    );
  });
});
