import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { RawRow } from '../../src/domain/row.ts';
import type { TableDef } from '../../src/domain/table.ts';
import { recordJson, writeRecords } from '../../src/render/row-json.ts';
import { Utf8Out } from '../../src/render/utf8-out.ts';
import type { Dialect } from '../../src/store/dialect.ts';
import { RowStore } from '../../src/store/rows.ts';
import { TableCatalog } from '../../src/store/table-catalog.ts';
import { type TestApp, eachDatabase, startApp, uploadFile } from '../support/harness.ts';

/** writeRecords' bytes as text, from a buffer of 16 bytes to begin with (grown as the records are written). */
function recordsJson(table: TableDef, rows: readonly RawRow[], dialect: Dialect): string {
  const out = new Utf8Out(16);
  writeRecords(out, table, rows, dialect);
  return out.bytes().toString('utf8');
}

it('Utf8Out writes each piece as UTF-8, growing past any piece', () => {
  const pieces = ['{', '"東京":', '"😀', 'x'.repeat(40), '\u2028 café"', '', 'é'.repeat(100), '}', '😀'.repeat(3000)];
  for (const capacity of [1, 7, 64, 100_000]) {
    const out = new Utf8Out(capacity);
    for (const p of pieces) out.text(p);
    assert.deepEqual(out.bytes(), Buffer.from(pieces.join('')), `capacity ${capacity}`);
  }
});

/** Records rendered straight from the columns are the very text of the decoded record, for every field type and awkward value. */
eachDatabase('records rendered as JSON text', (kind) => {
  let t: TestApp;

  before(async () => {
    t = await startApp(kind);
  });
  after(() => t.close());

  it('equals JSON.stringify of the decoded record, value for value', async () => {
    const fields = [
      { code: 'text', type: 'text' }, { code: 'number', type: 'number' }, { code: 'boolean', type: 'boolean' },
      { code: 'dateTime', type: 'dateTime' }, { code: 'date', type: 'date' }, { code: 'time', type: 'time' },
      { code: 'yearMonth', type: 'yearMonth' }, { code: 'select', type: 'select', options: { choices: ['a "quoted" one', 'b'] } },
      { code: 'record', type: 'record' }, { code: 'list', type: 'list' }, { code: 'file', type: 'file' },
      { code: 'weird_Code9', type: 'text' },
    ];
    assert.equal((await t.post('/api/tables', { code: 'all', name: 'all', fields })).status, 201);
    const rows = [
      { id: 'full', values: {
        text: 'quote " backslash \\ newline \n tab \t \u2028 😀 東京', number: -12.5e-3, boolean: true, dateTime: '2024-05-01T09:30:00+09:00',
        date: '2024-02-29', time: '23:59:59', yearMonth: '2024-12', select: 'a "quoted" one',
        record: { 'k"ey': [1, 'two', { three: null }], '東': true, n: 1e21 }, list: ['x', 2, false, null, { y: '\u0001' }],
        file: { id: await uploadFile(t, 'all', 'full'), name: 'a, \'b\' 東京.pdf' }, weird_Code9: '',
      } },
      { id: 'empty', values: {} },
      { id: 'zeroes', values: { number: 0, boolean: false, record: {}, list: [], text: '0' } },
    ];
    assert.equal((await t.post('/api/tables/all/rows-bulk', { data: rows })).status, 201);
    const table = await new TableCatalog(t.database).find(t.database.db, 'all');
    assert.ok(table);
    const store = new RowStore(t.database);
    const raws = [];
    for (const { id } of rows) {
      const raw = await store.get(t.database.db, table, id);
      assert.ok(raw);
      raws.push(raw);
      assert.equal(recordJson(table, raw, t.database.dialect), JSON.stringify(store.toRecord(table, raw)), id);
    }
    assert.equal(recordsJson(table, raws, t.database.dialect), JSON.stringify(raws.map((r) => store.toRecord(table, r))));
    // A page whose values arrive decoded (PostgreSQL) is written by one JSON.stringify of the
    // records: the same text as each record rendered from its columns.
    assert.equal(recordsJson(table, raws, t.database.dialect), `[${raws.map((r) => recordJson(table, r, t.database.dialect)).join(',')}]`);
    assert.equal(recordsJson(table, [], t.database.dialect), '[]');
    // With links, a file value gains its download URL and expiry, and nothing else changes.
    const links = (file: { id: string }) => ({ url: `https://x.test/${file.id}`, expiresAt: '2030-01-01T00:00:00.000Z' });
    const linked = JSON.parse(recordJson(table, raws[0], t.database.dialect, links));
    const plain = store.toRecord(table, raws[0]);
    assert.deepEqual(linked, { ...plain, values: { ...plain.values, file: { ...(plain.values.file as object), url: `https://x.test/${(plain.values.file as { id: string }).id}`, expiresAt: '2030-01-01T00:00:00.000Z' } } });
  });
});
