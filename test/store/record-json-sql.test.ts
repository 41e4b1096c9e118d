import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { CompiledQuery, sql } from 'kysely';
import { recordJson } from '../../src/render/row-json.ts';
import { newRowSystemJson } from '../../src/domain/record-system-json.ts';
import { exactRecordJsonSql, recordJsonSql } from '../../src/store/record-json-sql.ts';
import { RowStore } from '../../src/store/rows.ts';
import { TableCatalog } from '../../src/store/table-catalog.ts';
import { type TestApp, eachDatabase, startApp, uploadFile } from '../support/harness.ts';

/**
 * The database renders the records of change entries written beside the rows (store/record-json-sql.ts):
 * they must read as the records the API answers, value for value, for every field type and awkward value.
 */
eachDatabase('records rendered as JSON text by the database', (kind) => {
  let t: TestApp;

  before(async () => {
    t = await startApp(kind);
  });
  after(() => t?.close());

  it('read as the records rendered in JavaScript, value for value', async () => {
    const fields = [
      { code: 'text', type: 'text' }, { code: 'number', type: 'number' }, { code: 'boolean', type: 'boolean' },
      { code: 'dateTime', type: 'dateTime' }, { code: 'date', type: 'date' }, { code: 'time', type: 'time' },
      { code: 'yearMonth', type: 'yearMonth' }, { code: 'select', type: 'select', options: { choices: ["a \"quoted\" o'ne", 'b'] } },
      { code: 'record', type: 'record' }, { code: 'list', type: 'list' }, { code: 'file', type: 'file' },
      { code: 'weird_Code9', type: 'text' },
    ];
    assert.equal((await t.post('/api/tables', { code: 'all', name: 'all', fields })).status, 201);
    const rows = [
      { id: 'full', values: {
        text: "quote \" apostrophe ' backslash \\ newline \n tab \t \u0001 \u007f \u2028 😀 東京 </script>", number: -12.5e-3, boolean: true,
        dateTime: '2024-05-01T09:30:00.123+09:00', date: '2024-02-29', time: '23:59:59', yearMonth: '2024-12', select: "a \"quoted\" o'ne",
        record: { 'k"ey': [1, 'two', { three: null }], '東': true, n: 1e21, small: 5e-324, f: 0.1 }, list: ['x', 2, false, null, { y: '\u0001' }, 1.5],
        file: { id: await uploadFile(t, 'all', 'full'), name: 'a, \'b\' 東京.pdf' }, weird_Code9: '',
      } },
      { id: 'empty', values: {} },
      { id: 'zeroes', values: { number: 0, boolean: false, record: {}, list: [], text: '0', dateTime: '0001-01-01T00:00:00Z', date: '0001-01-01' } },
      { id: 'edges', values: { number: 1.7976931348623157e308, dateTime: '9999-12-31T23:59:59.999Z', date: '9999-12-31', time: '00:00:00', yearMonth: '0001-01' } },
      { id: 'numbers', values: { number: 0.1 + 0.2, list: [123456789012345680000, -1e-7, 2 ** 53 + 2] } },
      { id: 'tiny', values: { number: 5e-324, text: 'x'.repeat(10_000) } },
      { id: 'huge', values: { number: 1e21, text: '' } },
      { id: 'whole', values: { number: 2, list: [2, 2.5], boolean: false } },
    ];
    assert.equal((await t.post('/api/tables/all/rows-bulk', { data: rows })).status, 201);
    const table = await new TableCatalog(t.database).find(t.database.db, 'all');
    assert.ok(table);
    const store = new RowStore(t.database);
    for (const { id } of rows) {
      const raw = await store.get(t.database.db, table, id);
      assert.ok(raw);
      const { rows: [rendered] } = await sql<{ json: string }>`select ${sql.raw(recordJsonSql(table, 'r', t.database.dialect))} as json from ${sql.table(table.physical)} as r where r.id = ${id}`.execute(t.database.db);
      assert.deepStrictEqual(JSON.parse(rendered.json), JSON.parse(recordJson(table, raw, t.database.dialect)), id);
      // A new row's system fields given as one bound text, as bulk creates give them, read the same, byte for byte there.
      const system = newRowSystemJson({ now: raw.created_at as string, memberId: raw.created_by as string });
      const pg = t.database.dialect.name === 'postgres';
      const statement: string = `select ${recordJsonSql(table, 'r', t.database.dialect, pg ? '$1::text' : '?')} as json from "${table.physical}" as r where r.id = ${pg ? '$2' : '?'}`;
      const { rows: [given] } = await t.database.db.executeQuery<{ json: string }>(CompiledQuery.raw(statement, [system, id]));
      assert.equal(given.json.slice(0, given.json.indexOf('"values":{')), rendered.json.slice(0, rendered.json.indexOf('"values":{')), id);
      assert.deepStrictEqual(JSON.parse(given.json), JSON.parse(rendered.json), id);
    }
  });
  it('a table of 500 fields (its record more parts than one SQL function call takes) reads as rendered in JavaScript, byte for byte where exact', async () => {
    const fields = Array.from({ length: 500 }, (_, i) => ({ code: `f${i}`, type: 'text' }));
    assert.equal((await t.post('/api/tables', { code: 'wide', name: 'wide', fields })).status, 201);
    const values = Object.fromEntries(fields.filter((_, i) => i % 3 !== 1).map((f, i) => [f.code, i % 2 === 0 ? `v${i} "q" \\ 東` : '']));
    assert.equal((await t.post('/api/tables/wide/rows-bulk', { data: [{ id: 'w1', values }] })).status, 201);
    const table = await new TableCatalog(t.database).find(t.database.db, 'wide');
    assert.ok(table);
    const raw = await new RowStore(t.database).get(t.database.db, table, 'w1');
    assert.ok(raw);
    const rendered = recordJson(table, raw, t.database.dialect);
    const { rows: [entry] } = await sql<{ json: string }>`select ${sql.raw(recordJsonSql(table, 'r', t.database.dialect))} as json from ${sql.table(table.physical)} as r where r.id = ${'w1'}`.execute(t.database.db);
    assert.deepStrictEqual(JSON.parse(entry.json), JSON.parse(rendered));
    const { rows: [exact] } = await sql<{ json: string }>`select ${sql.raw(exactRecordJsonSql(table, 'r', t.database.dialect))} as json from ${sql.table(table.physical)} as r where r.id = ${'w1'}`.execute(t.database.db);
    assert.equal(exact.json, rendered);
  });
});
