import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { RefRow } from '../support/reference-rows.ts';
import { type TestApp, eachDatabase, startApp } from '../support/harness.ts';
import { FIELDS, LINK_FIELD, LINK_IDS, LINK_TARGET, assertSameGroups, prng, randomQuery, randomRow, referenceGroups, walkGroups } from '../support/reference-aggregates.ts';

/**
 * GET /rows-aggregate against an in-memory reference (test/support/reference-aggregates.ts), on
 * both databases: random tables of rows (nulls, ties, negative numbers, date-times around
 * midnights and daylight-saving changes in several zones, dates at ISO week-year and quarter
 * boundaries; some fields indexed; a single link) and random group keys (a link's by the linked id), buckets, time zones, metrics, filters,
 * havings, sorts and page sizes; every page followed to the end, each page full but the last, and the groups equal
 * to the reference's in its order. ROWHOUSE_AGG_SEED explores other cases.
 */

const SEED = Number(process.env.ROWHOUSE_AGG_SEED ?? 20_261_126);
const TABLES = 5;
const QUERIES = Number(process.env.ROWHOUSE_AGG_QUERIES ?? 40);

eachDatabase('aggregates: against a reference', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(kind);
    // The rows every table's single link `lk` may link to: grouped by their ids.
    assert.equal((await t.post('/api/tables', { code: LINK_TARGET, name: LINK_TARGET, fields: [{ code: 'x', type: 'text' }] })).status, 201);
    const people = await t.post(`/api/tables/${LINK_TARGET}/rows-bulk`, { data: LINK_IDS.map((id) => ({ id, values: {} })) });
    assert.equal(people.status, 201, people.text);
  });
  after(() => t.close());

  for (let table = 0; table < TABLES; table++) {
    it(`table ${table}: ${QUERIES} random queries walked page by page`, async () => {
      const r = prng(SEED + table);
      const code = `agg${table}`;
      // Some fields indexed: the database may then group and order by the index.
      const fields = [...FIELDS.map((f) => (r() < 0.5 ? { ...f, options: { ...('options' in f ? f.options : {}), indexed: true } } : f)), LINK_FIELD];
      const created = await t.post('/api/tables', { code, name: code, fields });
      assert.equal(created.status, 201, created.text);
      const count = 5 + Math.floor(r() * 60);
      const inserted = await t.post(`/api/tables/${code}/rows-bulk`, { data: Array.from({ length: count }, () => ({ values: randomRow(r, false, true) })) });
      assert.equal(inserted.status, 201, inserted.text);
      const rows = inserted.body.data as RefRow[];
      for (let i = 0; i < QUERIES; i++) {
        const q = randomQuery(r, true);
        const context = `seed ${SEED + table}, query ${i}: ${JSON.stringify(q)}`;
        const pages = await walkGroups(t, code, q);
        pages.slice(0, -1).forEach((p, k) => assert.equal(p.length, q.pageSize, `${context}: page ${k} is not full`));
        assert.ok(pages[pages.length - 1].length <= q.pageSize, context);
        assertSameGroups(pages.flat(), referenceGroups(rows, q), context);
      }
    });
  }
});
