import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import iconv from 'iconv-lite';
import { TEST_KEY, type TestApp, allRows, eachDatabase, expectError, startApp, uploadFile } from '../support/harness.ts';
import type { SqliteAdapter } from '../../src/store/sqlite/open-sqlite.ts';

/**
 * POST /api/tables/{t}/rows-import (issue "Spreadsheet round trip"): files in the shapes
 * rows-export writes come back as the same rows; a bad file is one clear 400 naming its line,
 * and writes nothing.
 */

const FIELDS = [
  { code: 'title', type: 'text' },
  { code: 'n', type: 'number' },
  { code: 'ok', type: 'boolean' },
  { code: 'at', type: 'dateTime' },
  { code: 'd', type: 'date' },
  { code: 'tm', type: 'time' },
  { code: 'ym', type: 'yearMonth' },
  { code: 'sel', type: 'select', options: { choices: ['a', 'b,c', 'say "x"', '東京'] } },
  { code: 'rec', type: 'record' },
  { code: 'lst', type: 'list' },
  { code: 'doc', type: 'file' },
];

/** Cells that break careless readers: delimiters, quotes, CR, LF, tabs, Japanese (CP932 too), emoji-free for Shift_JIS. */
const ROWS = [
  { id: 'a-tricky', values: { title: 'Comma, "quote"\ttab\r\nCRLF\nLF 東京 ① 髙', n: 3.25, ok: true, at: '2024-05-01T00:30:00.000Z', d: '2024-02-29', tm: '23:59:59', ym: '2024-12', sel: 'b,c', rec: { a: 1, b: 'x,"y"\n', nested: { z: [1, 2] } }, lst: [1, 'two, "2"', { three: 3 }, null, true] } },
  { id: 'b-nulls', values: { ok: false, n: 0 } },
  { id: 'c-japanese', values: { title: '日本語のテキスト：東京タワー', n: -1234567.891, ok: false, sel: 'say "x"', rec: {}, lst: [] } },
  { id: 'd-big', values: { title: '  padded  ', n: 1e21, sel: '東京', lst: ['東京'] } },
];

eachDatabase('rows: import', (kind) => {
  let t: TestApp;
  let seq = 0;
  before(async () => {
    t = await startApp(kind);
    assert.equal((await t.post('/api/tables', { code: 'src', name: 'src', fields: FIELDS })).status, 201);
    const data = [];
    for (const row of ROWS) {
      const doc = row.id === 'a-tricky' ? { doc: { id: await uploadFile(t, 'src', row.id), name: 'a.txt' } } : {};
      data.push({ ...row, values: { ...row.values, ...doc } });
    }
    assert.equal((await t.post('/api/tables/src/rows-bulk', { data })).status, 201);
  });
  after(() => t.close());

  async function freshTable(): Promise<string> {
    const code = `dst_${++seq}`;
    assert.equal((await t.post('/api/tables', { code, name: code, fields: FIELDS })).status, 201);
    return code;
  }
  async function exported(query: Record<string, string>): Promise<Buffer> {
    const res = await t.app.inject({ method: 'GET', url: `/api/tables/src/rows-export?${new URLSearchParams(query)}`, headers: { 'x-api-key': TEST_KEY } });
    assert.equal(res.statusCode, 200, res.body);
    return res.rawPayload;
  }
  const importFile = (table: string, body: Buffer | string, query: Record<string, string>) =>
    t.request('POST', `/api/tables/${table}/rows-import?${new URLSearchParams(query)}`, { raw: body, headers: { 'content-type': 'text/csv' } });
  /** Rows as comparable: ids and values, file fields left out. */
  const comparable = (rows: Record<string, any>[]) => rows.map((r) => ({ id: r.id, values: { ...r.values, doc: undefined } })).sort((a, b) => a.id.localeCompare(b.id));

  describe('round trips', () => {
    for (const format of ['csv', 'tsv', 'jsonl']) {
      for (const encoding of ['utf8', 'utf8Bom', 'shiftJis']) {
        for (const newline of ['crlf', 'lf']) {
          it(`${format}, ${encoding}, ${newline}: the same rows come back`, async () => {
            const file = await exported({ format, encoding, newline });
            const table = await freshTable();
            const r = await importFile(table, file, { format, encoding });
            assert.equal(r.status, 200, r.text);
            assert.equal(r.body.created, ROWS.length);
            assert.equal(r.body.failed, 0);
            assert.match(r.body.warnings.join('\n'), /doc: a file field is not imported/);
            assert.deepEqual(comparable(await allRows(t, table)), comparable(await allRows(t, 'src')));
          });
        }
      }
    }
  });

  it('upserts: an id that exists is updated, others created; create mode refuses it', async () => {
    const table = await freshTable();
    assert.equal((await importFile(table, 'id,title\nx1,one\n', { format: 'csv', encoding: 'utf8' })).status, 200);
    const again = await importFile(table, 'id,title\nx1,uno\nx2,two\n', { format: 'csv', encoding: 'utf8', mode: 'upsert' });
    assert.equal(again.status, 200, again.text);
    assert.deepEqual([again.body.created, again.body.updated], [1, 1]);
    assert.equal((await t.get(`/api/tables/${table}/rows/x1`)).body.values.title, 'uno');
    const dup = await importFile(table, 'id,title\nx3,three\nx1,dup\n', { format: 'csv', encoding: 'utf8' });
    const body = expectError(dup, 409 === dup.status ? 409 : 400);
    assert.match(JSON.stringify(body), /line 3/);
    expectError(await t.get(`/api/tables/${table}/rows/x3`), 404);
  });

  it('SQLite: the connection settings an atomic import changes are put back, after a good file and a bad one', async (c) => {
    if (kind !== 'sqlite') return c.skip('SQLite only');
    const { runNow } = t.database as SqliteAdapter;
    const settings = () => ['cache_size', 'wal_autocheckpoint'].map((name) => Object.values(runNow(`pragma ${name}`, [])[0])[0]);
    const before = settings();
    const table = await freshTable();
    assert.equal((await importFile(table, 'title,n\nfine,1\n', { format: 'csv', encoding: 'utf8' })).status, 200);
    assert.deepEqual(settings(), before);
    expectError(await importFile(table, 'title,n\nbad,notanumber\n', { format: 'csv', encoding: 'utf8' }), 400);
    assert.deepEqual(settings(), before);
    expectError(await importFile(table, 'title,n\n"never closed,2\n', { format: 'csv', encoding: 'utf8' }), 400);
    assert.deepEqual(settings(), before);
  });

  it('with atomic=false writes the good rows and names the bad ones', async () => {
    const table = await freshTable();
    const r = await importFile(table, 'title,n\nfine,1\nbad,notanumber\nalso fine,2\n', { format: 'csv', encoding: 'utf8', atomic: 'false' });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual([r.body.created, r.body.failed], [2, 1]);
    assert.deepEqual(r.body.problems.map((p: { line: number; column: string }) => [p.line, p.column]), [[3, 'n']]);
    assert.equal((await allRows(t, table)).length, 2);
  });

  describe('bad files: one 400 naming the line, and nothing written', () => {
    const cases: [string, Buffer | string, Record<string, string>, RegExp][] = [
      ['a truncated quote', 'title,n\nok,1\n"never closed,2\n', { format: 'csv' }, /line 3.*not closed/],
      // csv-parse's code for it has no CSV_ prefix: it was taken for a fault (500).
      ['a quote inside an unquoted cell', 'title,n\nok,1\nsay "hi",2\n', { format: 'csv' }, /line 3.*quote the whole cell/],
      ['a JSONL file read as CSV', '{"id":"a","values":{"title":"x"}}\n', { format: 'csv' }, /line 1.*quote/],
      ['invalid Shift_JIS bytes', Buffer.concat([iconv.encode('title\n東京\n', 'cp932'), Buffer.from([0x81, 0x20, 0x0a])]), { format: 'csv', encoding: 'shiftJis' }, /line 3.*Shift_JIS/],
      ['invalid UTF-8 bytes', Buffer.concat([Buffer.from('title\nok\n'), Buffer.from([0xff, 0xfe, 0x0a])]), { format: 'csv' }, /line 3.*UTF-8/],
      ['an unknown column', 'title,nope\nx,1\n', { format: 'csv' }, /line 1.*nope/],
      ['a header only', 'title,n\r\n', { format: 'csv' }, /no rows/],
      ['an empty body', '', { format: 'csv' }, /empty/],
      ['a record with too many cells', 'title,n\nx,1,2\n', { format: 'csv' }, /line 2/],
      // The line of a parse error is where its record starts, whatever the line ends and however far the reading had got.
      ['a truncated quote, CRLF', 'title,n\r\nok,1\r\n"never closed,2\r\n', { format: 'csv' }, /line 3.*not closed/],
      ['too many cells after a cell of two lines, CRLF', 'title,n\r\n"two\r\nlines",1\r\nx,1,2\r\n', { format: 'csv' }, /line 4.*number of cells/],
      ['a JSONL line that is not JSON', '{"values":{"title":"x"}}\n{nope\n', { format: 'jsonl' }, /line 2.*not a JSON/],
      ['a JSONL line with an unknown key', '{"values":{},"extra":1}\n', { format: 'jsonl' }, /line 1.*extra/],
      ['a repeated column', 'title,title\nx,y\n', { format: 'csv' }, /twice/],
    ];
    for (const [what, body, query, message] of cases) {
      it(what, async () => {
        const table = await freshTable();
        const r = await importFile(table, body, { encoding: 'utf8', ...query });
        assert.match(JSON.stringify(expectError(r, 400)), message);
        assert.equal((await allRows(t, table)).length, 0);
      });
    }

    it('a wrong type in row 50,000: its line, and nothing written', async () => {
      const table = await freshTable();
      const lines = ['title,n'];
      for (let i = 0; i < 50_500; i++) lines.push(`row ${i},${i === 49_999 ? 'x' : i}`);
      const r = await importFile(table, lines.join('\n'), { format: 'csv', encoding: 'utf8' });
      const body = expectError(r, 400);
      // Row 50,000 of the file, on its line 50,001 (after the header).
      assert.deepEqual(body.details, [{ path: 'line 50001, column n', message: 'must be a finite number, not a string' }]);
      assert.equal((await allRows(t, table)).length, 0);
    });

    // Chunks are written while the next is read (row-import.ts): these fail with writes done and one in flight.
    it('a truncated quote after 5,000 good rows: its line, and nothing written', async () => {
      const table = await freshTable();
      const lines = ['title,n'];
      for (let i = 0; i < 5_000; i++) lines.push(`row ${i},${i}`);
      lines.push('"never closed,1');
      const body = expectError(await importFile(table, lines.join('\n'), { format: 'csv', encoding: 'utf8' }), 400);
      assert.match(JSON.stringify(body), /line 5002.*not closed/);
      assert.equal((await allRows(t, table)).length, 0);
    });

    it('an id that exists, at row 3,000 of 6,000: its line, and nothing written', async () => {
      const table = await freshTable();
      assert.equal((await importFile(table, 'id,title\ntaken,first\n', { format: 'csv', encoding: 'utf8' })).status, 200);
      const lines = ['id,title,n'];
      for (let i = 0; i < 6_000; i++) lines.push(`${i === 2_999 ? 'taken' : `r${i}`},row ${i},${i}`);
      const r = await importFile(table, lines.join('\n'), { format: 'csv', encoding: 'utf8' });
      assert.ok(r.status === 400 || r.status === 409, r.text);
      assert.match(r.text, /line 3001/);
      assert.deepEqual((await allRows(t, table)).map((row) => row.id), ['taken']);
    });

    it('checks the query: format and encoding are required, mode and atomic have their values', async () => {
      const table = await freshTable();
      const queries: Record<string, string>[] = [{ encoding: 'utf8' }, { format: 'csv' }, { format: 'xml', encoding: 'utf8' }, { format: 'csv', encoding: 'utf8', mode: 'merge' }, { format: 'csv', encoding: 'utf8', atomic: 'yes' }, { format: 'csv', encoding: 'utf8', extra: '1' }];
      for (const query of queries) {
        expectError(await importFile(table, 'title\nx\n', query), 400);
      }
      expectError(await importFile('nope', 'title\nx\n', { format: 'csv', encoding: 'utf8' }), 404);
      const noKey = await t.request('POST', `/api/tables/${table}/rows-import?format=csv&encoding=utf8`, { raw: 'title\nx\n', key: null, headers: { 'content-type': 'text/csv' } });
      expectError(noKey, 401);
    });
  });
});
