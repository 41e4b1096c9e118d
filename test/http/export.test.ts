import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parse } from 'csv-parse/sync';
import iconv from 'iconv-lite';
import { sql } from 'kysely';
import { physicalColumn, physicalTable } from '../../src/store/user-tables.ts';
import type { PostgresAdapter } from '../../src/store/postgres/open-postgres.ts';
import { type Reply, TEST_KEY, type TestApp, eachDatabase, expectError, startApp, uploadFile } from '../support/harness.ts';

/**
 * GET /api/tables/{t}/rows-export (seed spec "Export rows"; CONTRACT §7): every format parsed with a
 * real parser and compared with GET /rows/{id}; exact bytes of encodings, BOM, newlines, header and
 * quoting; headers; filter/sort/limit and multi-chunk exports; the 400s and 404 before any byte.
 * Streaming behaviour against a real listening server lives in export-stream.test.ts.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Row = Record<string, any>;

const SYSTEM = ['id', 'createdAt', 'updatedAt', 'createdBy', 'updatedBy'];
const NL = { crlf: '\r\n', lf: '\n' } as const;
type Newline = keyof typeof NL;

const ALL_TYPES = [
  { code: 'title', type: 'text' },
  { code: 'n', type: 'number' },
  { code: 'ok', type: 'boolean' },
  { code: 'at', type: 'dateTime' },
  { code: 'd', type: 'date' },
  { code: 'tm', type: 'time' },
  { code: 'ym', type: 'yearMonth' },
  { code: 'sel', type: 'select', options: { choices: ['a', 'b,c', 'say "x"'] } },
  { code: 'rec', type: 'record' },
  { code: 'lst', type: 'list' },
  { code: 'doc', type: 'file' },
];
const CODES = ALL_TYPES.map((f) => f.code);

/** Values chosen to break a careless writer: delimiters, quotes, CR, LF, tabs, emoji, Japanese, nulls. */
const TRICKY: { id: string; values: Record<string, unknown> }[] = [
  {
    id: 'a-tricky',
    values: {
      title: 'Comma, "quote"\ttab\r\nCRLF\nLF\rCR 😀 東京',
      n: 3.25,
      ok: true,
      at: '2024-05-01T09:30:00+09:00',
      d: '2024-02-29',
      tm: '23:59:59',
      ym: '2024-12',
      sel: 'b,c',
      rec: { a: 1, b: 'x,"y"\n', nested: { z: [1, 2], t: '\t' }, j: '日本' },
      lst: [1, 'two, "2"', { three: 3 }, null, true],
      doc: { id: 'file-1', name: '報告書, final (1).pdf' },
    },
  },
  { id: 'b-nulls', values: { ok: false, n: 0 } },
  {
    id: 'c-japanese',
    values: {
      title: '日本語のテキスト：東京タワー🗼',
      n: -1234567.891,
      ok: false,
      sel: 'say "x"',
      rec: {},
      lst: [],
      doc: { id: 'file-2', name: 'plain.txt' },
    },
  },
  { id: 'd-spaces', values: { title: '  padded  ', n: 1e21, ok: true, sel: 'a', lst: ['東京', '😀'], rec: { '': null } } },
  { id: 'e-empty', values: { title: '', n: 42 } },
];

/** What a csv/tsv cell must hold for a value as GET /rows/{id} returns it. */
function cellOf(code: string, value: unknown): string {
  if (value === null) return '';
  if (code === 'doc') {
    const v = value as Row;
    return JSON.stringify({ name: v.name, mimeType: v.mimeType ?? null, size: v.size ?? null });
  }
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** A row as a jsonl line must carry it: the row record, file values without url and expiresAt. */
function jsonlOf(row: Row): Row {
  const values = { ...row.values };
  if (values.doc) {
    const { url: _u, expiresAt: _e, ...rest } = values.doc;
    values.doc = rest;
  }
  return { ...row, values };
}

const withQuery = (url: string, pairs: [string, string][]) => `${url}?${new URLSearchParams(pairs)}`;

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  raw: Buffer;
  text: string;
}

eachDatabase('rows: export', (kind) => {
  let t: TestApp;
  let seq = 0;
  before(async () => {
    t = await startApp(kind);
  });
  after(() => t.close());

  async function makeTable(fields: Record<string, unknown>[], code: string | null = `ex_${++seq}`): Promise<Row> {
    const r = await t.post('/api/tables', { ...(code === null ? {} : { code }), name: code ?? `nameless ${++seq}`, fields });
    assert.equal(r.status, 201, r.text);
    return r.body;
  }

  /** Writes the rows; a file value's `id` names bytes to upload for it first (`file-1` → an uploaded file's id). */
  async function bulk(table: string, items: { id?: string; values: Record<string, unknown> }[]): Promise<Row[]> {
    const data = [];
    for (const item of items) {
      const doc = item.values.doc as { id: string; name: string } | undefined;
      const values = doc ? { ...item.values, doc: { ...doc, id: await uploadFile(t, table, item.id as string, `bytes of ${doc.id}`) } } : item.values;
      data.push({ ...item, values });
    }
    const r = await t.post(`/api/tables/${table}/rows-bulk`, { data });
    assert.equal(r.status, 201, r.text);
    return r.body.data;
  }

  /** The export's exact bytes, through inject. */
  async function exportRaw(table: string, query: Record<string, string> | [string, string][]): Promise<Raw> {
    const pairs = Array.isArray(query) ? query : Object.entries(query);
    const res = await t.app.inject({ method: 'GET', url: withQuery(`/api/tables/${table}/rows-export`, pairs), headers: { 'x-api-key': TEST_KEY } });
    return { status: res.statusCode, headers: res.headers as Raw['headers'], raw: res.rawPayload, text: res.body };
  }

  async function exportOk(table: string, query: Record<string, string>): Promise<Raw> {
    const r = await exportRaw(table, query);
    assert.equal(r.status, 200, r.text.slice(0, 500));
    return r;
  }

  /** Every row of the table in list order, following nextUrl. */
  async function listAll(table: string, query: Record<string, unknown> = {}): Promise<Row[]> {
    const out: Row[] = [];
    let r: Reply = await t.get(`/api/tables/${table}/rows`, { query: { pageSize: '200', ...query } });
    for (;;) {
      assert.equal(r.status, 200, r.text);
      out.push(...r.body.data);
      if (r.body.nextUrl === null) return out;
      r = await t.get((r.body.nextUrl as string).replace(/^https?:\/\/[^/]+/, ''));
    }
  }

  async function getRow(table: string, id: string): Promise<Row> {
    const r = await t.get(`/api/tables/${table}/rows/${encodeURIComponent(id)}`);
    assert.equal(r.status, 200, r.text);
    return r.body;
  }

  const parseCsv = (text: string, format: 'csv' | 'tsv', newline: Newline): string[][] =>
    parse(text, { delimiter: format === 'csv' ? ',' : '\t', record_delimiter: NL[newline], bom: false, relax_column_count: false });

  /** A request that must fail before any byte of the file: the error body and nothing else. */
  async function expectExportError(table: string, query: Record<string, string> | [string, string][], status: number): Promise<Record<string, unknown>> {
    const r = await exportRaw(table, query);
    let body: unknown;
    try {
      body = JSON.parse(r.text);
    } catch {
      assert.fail(`expected a JSON error body, got ${r.status}: ${JSON.stringify(r.text.slice(0, 300))}`);
    }
    const b = expectError({ status: r.status, headers: r.headers, body, text: r.text }, status);
    assert.match(String(r.headers['content-type']), /^application\/json/);
    assert.equal(r.headers['content-disposition'], undefined);
    for (const k of Object.keys(b)) assert.ok(['statusCode', 'error', 'message', 'details'].includes(k), `unexpected key ${k}`);
    return b;
  }
  const paths = (b: Record<string, unknown>) => ((b.details ?? []) as { path: string }[]).map((d) => d.path);

  const OK = { format: 'csv', encoding: 'utf8', newline: 'lf' };

  describe('every format parsed back equals the rows as GET /rows/{id} returns them', () => {
    let code: string;
    let expected: Row[];
    before(async () => {
      code = (await makeTable(ALL_TYPES)).code;
      await bulk(code, TRICKY);
      // Another member edits one row, so updatedAt/updatedBy differ from createdAt/createdBy.
      const member = await t.post('/api/members', { name: 'Editor' });
      assert.equal(member.status, 201, member.text);
      const key = await t.post('/api/api-keys', { name: 'editor', memberId: member.body.id });
      assert.equal(key.status, 201, key.text);
      const edited = await t.patch(`/api/tables/${code}/rows/c-japanese`, { values: { n: 7.5 } }, { key: key.body.key });
      assert.equal(edited.status, 200, edited.text);
      assert.equal(edited.body.updatedBy, member.body.id);
      assert.notEqual(edited.body.updatedAt, edited.body.createdAt);
      expected = [];
      // Default order: createdAt (one bulk: equal), then id.
      for (const id of TRICKY.map((r) => r.id).sort()) expected.push(await getRow(code, id));
      assert.deepEqual(await listAll(code), expected);
      // Sanity: the stored values really are the tricky ones.
      assert.equal(expected[0].values.title, TRICKY[0].values.title);
      assert.equal(expected[0].values.at, '2024-05-01T00:30:00.000Z');
    });

    for (const format of ['csv', 'tsv'] as const) {
      for (const newline of ['crlf', 'lf'] as const) {
        for (const encoding of ['utf8', 'utf8Bom'] as const) {
          it(`${format}, ${newline}, ${encoding}: header of codes, then one record per row`, async () => {
            const r = await exportOk(code, { format, encoding, newline });
            const bom = r.raw.subarray(0, 3).equals(Buffer.from([0xef, 0xbb, 0xbf]));
            assert.equal(bom, encoding === 'utf8Bom');
            const text = r.raw.subarray(bom ? 3 : 0).toString('utf8');
            assert.ok(text.endsWith(NL[newline]), 'the last record ends with the newline');
            const records = parseCsv(text, format, newline);
            assert.deepEqual(records[0], [...SYSTEM, ...CODES]);
            assert.equal(records.length, expected.length + 1);
            for (const [i, row] of expected.entries()) {
              const want = [row.id, row.createdAt, row.updatedAt, row.createdBy, row.updatedBy, ...CODES.map((c) => cellOf(c, row.values[c]))];
              assert.deepEqual(records[i + 1], want, `row ${row.id}`);
            }
            // Spot checks of the representations themselves.
            const tricky = records[1];
            const at = (c: string) => tricky[SYSTEM.length + CODES.indexOf(c)];
            assert.equal(at('title'), TRICKY[0].values.title);
            assert.equal(at('ok'), 'true');
            assert.equal(records[2][SYSTEM.length + CODES.indexOf('ok')], 'false');
            assert.equal(records[2][SYSTEM.length + CODES.indexOf('title')], '', 'null is an empty cell');
            assert.equal(at('n'), '3.25');
            assert.deepEqual(JSON.parse(at('rec')), TRICKY[0].values.rec);
            assert.deepEqual(JSON.parse(at('lst')), TRICKY[0].values.lst);
            const doc = JSON.parse(at('doc'));
            assert.deepEqual(Object.keys(doc).sort(), ['mimeType', 'name', 'size']);
            assert.equal(doc.name, '報告書, final (1).pdf');
            assert.ok(!at('doc').includes(expected[0].values.doc.id), 'no file id in csv/tsv');
          });
        }
      }
    }

    for (const newline of ['crlf', 'lf'] as const) {
      it(`jsonl, ${newline}: one row record per line, structured values, no file url`, async () => {
        const r = await exportOk(code, { format: 'jsonl', encoding: 'utf8', newline });
        const text = r.raw.toString('utf8');
        assert.ok(text.endsWith(NL[newline]));
        const lines = text.slice(0, -NL[newline].length).split(NL[newline]);
        assert.equal(lines.length, expected.length);
        for (const [i, line] of lines.entries()) {
          assert.ok(!line.includes('\n') && !line.includes('\r'), 'no raw CR or LF inside a line');
          const doc = JSON.parse(line);
          assert.deepEqual(Object.keys(doc), [...SYSTEM, 'values']);
          assert.deepEqual(doc, jsonlOf(expected[i]));
          assert.ok(!('url' in (doc.values.doc ?? {})) && !('expiresAt' in (doc.values.doc ?? {})));
        }
        const first = JSON.parse(lines[0]);
        assert.deepEqual(first.values.rec, TRICKY[0].values.rec);
        assert.deepEqual(first.values.lst, TRICKY[0].values.lst);
        assert.equal(first.values.doc.name, '報告書, final (1).pdf');
        assert.equal(first.values.ok, true);
        assert.equal(JSON.parse(lines[1]).values.title, null);
        assert.equal(JSON.parse(lines[3]).values.n, 1e21);
      });
    }

    it('jsonl ignores header: header=false and header=true give the same bytes as none', async () => {
      const none = await exportOk(code, { format: 'jsonl', encoding: 'utf8', newline: 'lf' });
      for (const header of ['true', 'false']) {
        const r = await exportOk(code, { format: 'jsonl', encoding: 'utf8', newline: 'lf', header });
        assert.ok(r.raw.equals(none.raw), `header=${header}`);
      }
    });

    it('header=false drops the header line; header=true and omitted keep it', async () => {
      for (const format of ['csv', 'tsv'] as const) {
        const base = { format, encoding: 'utf8', newline: 'crlf' };
        const omitted = await exportOk(code, base);
        const yes = await exportOk(code, { ...base, header: 'true' });
        const no = await exportOk(code, { ...base, header: 'false' });
        const headerLine = [...SYSTEM, ...CODES].join(format === 'csv' ? ',' : '\t') + '\r\n';
        assert.equal(omitted.text.slice(0, headerLine.length), headerLine);
        assert.ok(yes.raw.equals(omitted.raw));
        assert.equal(no.text, omitted.text.slice(headerLine.length));
        assert.ok(no.text.startsWith(`${expected[0].id}${format === 'csv' ? ',' : '\t'}`));
        // With a BOM, the BOM still comes first.
        const bomNo = await exportOk(code, { ...base, encoding: 'utf8Bom', header: 'false' });
        assert.ok(bomNo.raw.equals(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), no.raw])));
      }
    });

    it('utf8Bom is EF BB BF then exactly the utf8 bytes, in every format; utf8 has no BOM', async () => {
      for (const format of ['csv', 'tsv', 'jsonl']) {
        const plain = await exportOk(code, { format, encoding: 'utf8', newline: 'lf' });
        const bom = await exportOk(code, { format, encoding: 'utf8Bom', newline: 'lf' });
        assert.notEqual(plain.raw[0], 0xef, format);
        assert.deepEqual([...bom.raw.subarray(0, 3)], [0xef, 0xbb, 0xbf], format);
        assert.ok(bom.raw.subarray(3).equals(plain.raw), format);
        assert.equal(bom.headers['content-type'], plain.headers['content-type']);
      }
    });
  });

  describe('exact bytes', () => {
    it('csv quoting: delimiter, ", CR and LF quote a value with " doubled; nothing else is quoted', async () => {
      const table = await makeTable([{ code: 'v', type: 'text' }]);
      const cases: [string | null, string, string][] = [
        // value, csv cell, tsv cell
        ['plain', 'plain', 'plain'],
        ['a,b', '"a,b"', 'a,b'],
        ['say "hi"', '"say ""hi"""', '"say ""hi"""'],
        ['"', '""""', '""""'],
        ['l1\nl2', '"l1\nl2"', '"l1\nl2"'],
        ['c1\rc2', '"c1\rc2"', '"c1\rc2"'],
        ['x\r\ny', '"x\r\ny"', '"x\r\ny"'],
        ['tab\there', 'tab\there', '"tab\there"'],
        ['  spaced  ', '  spaced  ', '  spaced  '],
        ["semi;colon it's", "semi;colon it's", "semi;colon it's"],
        ['東京😀', '東京😀', '東京😀'],
        ['', '', ''],
        [null, '', ''],
      ];
      const ids = cases.map((_, i) => `q${String(i).padStart(2, '0')}`);
      const rows = await bulk(table.code, cases.map(([v], i) => ({ id: ids[i], values: { v } })));
      for (const format of ['csv', 'tsv'] as const) {
        const sep = format === 'csv' ? ',' : '\t';
        for (const newline of ['crlf', 'lf'] as const) {
          const r = await exportOk(table.code, { format, encoding: 'utf8', newline });
          let want = [...SYSTEM, 'v'].join(sep) + NL[newline];
          for (const [i, row] of rows.entries()) {
            want += [row.id, row.createdAt, row.updatedAt, row.createdBy, row.updatedBy].join(sep) + sep + cases[i][format === 'csv' ? 1 : 2] + NL[newline];
          }
          assert.equal(r.text, want, `${format} ${newline}`);
          assert.ok(r.raw.equals(Buffer.from(want, 'utf8')));
        }
      }
    });

    it('shiftJis: Japanese as Shift_JIS bytes, one ? (0x3F) per unrepresentable character', async () => {
      const table = await makeTable([{ code: 'v', type: 'text' }, { code: 'w', type: 'list' }]);
      const rows = await bulk(table.code, [
        { id: 's1', values: { v: '東京', w: ['東京'] } },
        { id: 's2', values: { v: '😀é', w: null } },
        { id: 's3', values: { v: 'a😀éb,東', w: [] } },
      ]);
      const r = await exportOk(table.code, { format: 'csv', encoding: 'shiftJis', newline: 'crlf' });
      assert.equal(r.headers['content-type'], 'text/csv; charset=shift_jis');
      const ascii = (s: string) => Buffer.from(s, 'latin1');
      const sys = (row: Row) => ascii([row.id, row.createdAt, row.updatedAt, row.createdBy, row.updatedBy, ''].join(','));
      const want = Buffer.concat([
        ascii('id,createdAt,updatedAt,createdBy,updatedBy,v,w\r\n'),
        sys(rows[0]), Buffer.from([0x93, 0x8c, 0x8b, 0x9e]), ascii(',"[""'), Buffer.from([0x93, 0x8c, 0x8b, 0x9e]), ascii('""]"\r\n'),
        sys(rows[1]), ascii('??,\r\n'),
        sys(rows[2]), ascii('"a??b,'), Buffer.from([0x93, 0x8c]), ascii('",[]\r\n'),
      ]);
      assert.deepEqual([...r.raw], [...want]);
      // No UTF-8 sequence leaks through, and the whole decodes back as Shift_JIS.
      assert.ok(!r.raw.includes(Buffer.from('東', 'utf8')));
      assert.ok(iconv.decode(r.raw, 'Shift_JIS').includes('a??b,東'));

      for (const format of ['tsv', 'jsonl'] as const) {
        const x = await exportOk(table.code, { format, encoding: 'shiftJis', newline: 'lf' });
        assert.equal(x.headers['content-type'], `${format === 'tsv' ? 'text/tab-separated-values' : 'application/x-ndjson'}; charset=shift_jis`);
        assert.notEqual(x.raw[0], 0xef);
        const text = iconv.decode(x.raw, 'Shift_JIS');
        if (format === 'jsonl') {
          const docs = text.trimEnd().split('\n').map((l) => JSON.parse(l));
          assert.deepEqual(docs.map((d) => d.values.v), ['東京', '??', 'a??b,東']);
          assert.deepEqual(docs[0].values.w, ['東京']);
        } else {
          assert.ok(x.raw.includes(Buffer.from([0x93, 0x8c, 0x8b, 0x9e])));
          assert.deepEqual(parseCsv(text, 'tsv', 'lf').slice(1).map((rec) => rec[5]), ['東京', '??', 'a??b,東']);
        }
      }
    });

    it('jsonl lines are exactly JSON text of the row record and the newline', async () => {
      const table = await makeTable([{ code: 'v', type: 'text' }, { code: 'r', type: 'record' }]);
      await bulk(table.code, [{ id: 'j1', values: { v: 'a\r\nb "c"', r: { k: [1, { m: '\n' }] } } }, { id: 'j2', values: {} }]);
      const rows = [await getRow(table.code, 'j1'), await getRow(table.code, 'j2')];
      for (const newline of ['crlf', 'lf'] as const) {
        const r = await exportOk(table.code, { format: 'jsonl', encoding: 'utf8', newline });
        assert.equal(r.text, rows.map((row) => JSON.stringify(row) + NL[newline]).join(''));
      }
    });

    it('an empty table: the header alone, or nothing', async () => {
      const table = await makeTable([{ code: 'v', type: 'text' }]);
      assert.equal((await exportOk(table.code, { format: 'csv', encoding: 'utf8', newline: 'crlf' })).text, 'id,createdAt,updatedAt,createdBy,updatedBy,v\r\n');
      assert.equal((await exportOk(table.code, { format: 'tsv', encoding: 'utf8', newline: 'lf' })).text, 'id\tcreatedAt\tupdatedAt\tcreatedBy\tupdatedBy\tv\n');
      assert.equal((await exportOk(table.code, { format: 'csv', encoding: 'utf8', newline: 'lf', header: 'false' })).raw.length, 0);
      assert.equal((await exportOk(table.code, { format: 'jsonl', encoding: 'utf8', newline: 'lf' })).raw.length, 0);
      assert.deepEqual([...(await exportOk(table.code, { format: 'csv', encoding: 'utf8Bom', newline: 'lf', header: 'false' })).raw], [0xef, 0xbb, 0xbf]);
    });

    it('a table with no fields: the system columns only', async () => {
      const table = await makeTable([]);
      const [row] = await bulk(table.code, [{ id: 'only', values: {} }]);
      const r = await exportOk(table.code, { format: 'csv', encoding: 'utf8', newline: 'lf' });
      assert.equal(r.text, `id,createdAt,updatedAt,createdBy,updatedBy\nonly,${row.createdAt},${row.updatedAt},${row.createdBy},${row.updatedBy}\n`);
    });
  });

  describe('headers', () => {
    it('Content-Type per format with its charset; Content-Disposition names the code, or the id without one', async () => {
      const named = await makeTable([{ code: 'v', type: 'text' }]);
      const nameless = await makeTable([{ code: 'v', type: 'text' }], null);
      assert.equal(nameless.code, null);
      const types = { csv: 'text/csv', tsv: 'text/tab-separated-values', jsonl: 'application/x-ndjson' };
      const charsets = { utf8: 'utf-8', utf8Bom: 'utf-8', shiftJis: 'shift_jis' };
      for (const format of ['csv', 'tsv', 'jsonl'] as const) {
        for (const encoding of ['utf8', 'utf8Bom', 'shiftJis'] as const) {
          for (const ref of [named.code, named.id]) {
            const r = await exportOk(ref, { format, encoding, newline: 'lf' });
            assert.equal(r.headers['content-type'], `${types[format]}; charset=${charsets[encoding]}`);
            assert.equal(r.headers['content-disposition'], `attachment; filename="${named.code}.${format}"`);
          }
          const r = await exportOk(nameless.id, { format, encoding, newline: 'crlf' });
          assert.equal(r.headers['content-disposition'], `attachment; filename="${nameless.id}.${format}"`);
        }
      }
    });
  });

  it('a field added to the table appears in the header and as empty cells', async () => {
    const table = await makeTable([{ code: 'a', type: 'text' }]);
    const [row] = await bulk(table.code, [{ id: 'x1', values: { a: 'A' } }]);
    const csv = { format: 'csv', encoding: 'utf8', newline: 'lf' };
    const line = `x1,${row.createdAt},${row.updatedAt},${row.createdBy},${row.updatedBy}`;
    assert.equal((await exportOk(table.code, csv)).text, `id,createdAt,updatedAt,createdBy,updatedBy,a\n${line},A\n`);
    const put = await t.put(`/api/tables/${table.id}`, { fields: [{ code: 'b', type: 'number' }, ...table.fields] });
    assert.equal(put.status, 200, put.text);
    assert.equal((await exportOk(table.code, csv)).text, `id,createdAt,updatedAt,createdBy,updatedBy,b,a\n${line},,A\n`);
  });

  it('a column the database no longer has answers 409 before any byte, and exports again once it is back', async () => {
    // The column dropped behind the service's back: its cached definition still names it, as a
    // definition planned just before a concurrent PUT removed the field would.
    const table = await makeTable([{ code: 'a', type: 'text' }, { code: 'gone', type: 'text' }]);
    await bulk(table.code, [{ id: 'x1', values: { a: 'A', gone: 'G' } }]);
    const csv = { format: 'csv', encoding: 'utf8', newline: 'lf' };
    assert.equal((await exportOk(table.code, csv)).status, 200);
    const gone = table.fields.find((f: { code: string }) => f.code === 'gone');
    await sql.raw(`alter table "${physicalTable(table.id)}" drop column "${physicalColumn(gone.id)}"`).execute(t.database.db);
    const r = await t.get(`/api/tables/${table.code}/rows-export`, { query: csv });
    assert.match(String(expectError(r, 409).message), /fields changed/, r.text);
    // The column back, the same export answers again.
    await sql.raw(`alter table "${physicalTable(table.id)}" add column "${physicalColumn(gone.id)}" text`).execute(t.database.db);
    assert.match((await exportOk(table.code, csv)).text, /^id,createdAt,updatedAt,createdBy,updatedBy,a,gone\nx1,.*,A,\n$/);
  });

  describe('filter, sort and limit', () => {
    let code: string;
    before(async () => {
      code = (await makeTable([{ code: 'n', type: 'number' }, { code: 'label', type: 'text' }])).code;
      const items = [];
      for (let i = 0; i < 12; i++) items.push({ id: `f${String(i).padStart(2, '0')}`, values: { n: i % 4 === 3 ? null : i % 5, label: `L${i}` } });
      await bulk(code, items.reverse());
    });

    const ids = (r: Raw) => r.text.trimEnd().split('\n').map((l) => JSON.parse(l).id);
    const jsonl = { format: 'jsonl', encoding: 'utf8', newline: 'lf' };

    it('the same rows in the same order as the list route, for filters and sorts', async () => {
      const filters = [undefined, { values: { n: { _gte: 2 } } }, { values: { label: { _contains: 'l1' } } }, { values: { label: { _contains: 'L1' } } }, { _or: [{ values: { n: { _isNull: true } } }, { id: { _lt: 'f03' } }] }, { values: { label: { _startsWith: 'L1' } } }];
      const sorts = [
        undefined,
        [{ n: { direction: 'desc', nulls: 'nullsFirst' } }],
        [{ n: { direction: 'asc', nulls: 'nullsLast' } }, { label: { direction: 'desc', nulls: 'nullsLast' } }],
        [{ id: { direction: 'desc', nulls: 'nullsLast' } }],
      ];
      for (const filter of filters) {
        for (const sort of sorts) {
          const query: Record<string, string> = { ...jsonl };
          if (filter) query.filter = JSON.stringify(filter);
          if (sort) query.sort = JSON.stringify(sort);
          const listed = await listAll(code, { filter, sort });
          const r = await exportOk(code, query);
          const got = r.text === '' ? [] : ids(r);
          assert.deepEqual(got, listed.map((row) => row.id), JSON.stringify({ filter, sort }));
          // csv agrees with jsonl.
          const csv = await exportOk(code, { ...query, format: 'csv' });
          assert.deepEqual(parseCsv(csv.text, 'csv', 'lf').slice(1).map((rec) => rec[0]), got);
        }
      }
      // The filter really filtered, and the sort really sorted.
      const some = ids(await exportOk(code, { ...jsonl, filter: JSON.stringify({ values: { n: { _gte: 2 } } }) }));
      assert.ok(some.length > 0 && some.length < 12);
      const desc = ids(await exportOk(code, { ...jsonl, sort: JSON.stringify([{ id: { direction: 'desc', nulls: 'nullsLast' } }]) }));
      assert.deepEqual(desc, Array.from({ length: 12 }, (_, i) => `f${String(11 - i).padStart(2, '0')}`));
    });

    it('limit keeps the first rows of that order', async () => {
      const sort = JSON.stringify([{ n: { direction: 'desc', nulls: 'nullsLast' } }]);
      const all = ids(await exportOk(code, { ...jsonl, sort }));
      assert.equal(all.length, 12);
      for (const limit of [1, 5, 12, 1000]) {
        assert.deepEqual(ids(await exportOk(code, { ...jsonl, sort, limit: String(limit) })), all.slice(0, limit), `limit ${limit}`);
      }
      const filter = JSON.stringify({ values: { n: { _isNull: false } } });
      const filtered = ids(await exportOk(code, { ...jsonl, sort, filter }));
      assert.deepEqual(ids(await exportOk(code, { ...jsonl, sort, filter, limit: '2' })), filtered.slice(0, 2));
      // limit counts data rows, not the header.
      const csv = await exportOk(code, { format: 'csv', encoding: 'utf8', newline: 'lf', limit: '3' });
      assert.equal(parseCsv(csv.text, 'csv', 'lf').length, 4);
    });

    it('limit outside 1..1000 or not an integer is a 400 naming limit', async () => {
      for (const limit of ['0', '1001', 'abc', '-1', '1.5', '', '1e2', ' 5', '99999999999999999999']) {
        const b = await expectExportError(code, { ...jsonl, limit }, 400);
        assert.match(b.message as string, /limit/, limit);
      }
    });
  });

  describe('more rows than one chunk', () => {
    const TOTAL = 1234;
    let code: string;
    let order: string[];
    before(async () => {
      // n and m hold the same values; m has an index, n has none.
      code = (await makeTable([{ code: 'n', type: 'number' }, { code: 'label', type: 'text' }, { code: 'm', type: 'number', options: { indexed: true } }])).code;
      const all = Array.from({ length: TOTAL }, (_, i) => {
        const n = i % 11 === 0 ? null : i % 7;
        return { id: `r${String(i).padStart(4, '0')}`, values: { n, label: `label ${i}, "x"`, m: n } };
      });
      // Inserted out of id order: each bulk shares one createdAt, so the order rests on the id tiebreak.
      for (let i = 0; i < TOTAL; i += 1000) await bulk(code, all.slice(i, i + 1000).reverse());
      order = (await listAll(code)).map((r) => r.id);
      assert.equal(order.length, TOTAL);
    });

    it('every row exported once, in list order, in csv, tsv and jsonl', async () => {
      assert.deepEqual(order, [...order].sort(), 'default order ends in id');
      for (const format of ['csv', 'tsv', 'jsonl'] as const) {
        const r = await exportOk(code, { format, encoding: 'utf8', newline: 'crlf' });
        const got = format === 'jsonl'
          ? r.text.trimEnd().split('\r\n').map((l) => JSON.parse(l).id)
          : parseCsv(r.text, format, 'crlf').slice(1).map((rec) => rec[0]);
        assert.equal(got.length, TOTAL, format);
        assert.deepEqual(got, order, format);
      }
    });

    it('sorts with nulls first and last across chunks match the list, by a field with and without an index', async () => {
      for (const field of ['n', 'm']) {
        for (const direction of ['asc', 'desc']) {
          for (const nulls of ['nullsFirst', 'nullsLast']) {
            const sort = [{ [field]: { direction, nulls } }];
            const listed = (await listAll(code, { sort })).map((r) => r.id);
            const r = await exportOk(code, { format: 'tsv', encoding: 'utf8', newline: 'lf', sort: JSON.stringify(sort) });
            assert.deepEqual(parseCsv(r.text, 'tsv', 'lf').slice(1).map((rec) => rec[0]), listed, `${field} ${direction} ${nulls}`);
          }
        }
      }
    });

    it('PostgreSQL: an order no index gives is read through one cursor, sorted once, not page by page', async (c) => {
      if (kind !== 'postgres') return c.skip('SQLite reads every export in one statement');
      const { reads } = t.database as PostgresAdapter;
      const cursor = reads.cursor.bind(reads);
      assert.ok(cursor);
      let opened = 0;
      reads.cursor = (query, size) => {
        opened++;
        return cursor(query, size);
      };
      try {
        const sort = [{ n: { direction: 'desc', nulls: 'nullsLast' } }];
        const listed = (await listAll(code, { sort })).map((r) => r.id);
        const r = await exportOk(code, { format: 'jsonl', encoding: 'utf8', newline: 'lf', sort: JSON.stringify(sort) });
        assert.deepEqual(r.text.trimEnd().split('\n').map((l) => JSON.parse(l).id), listed);
        assert.equal(opened, 1);
      } finally {
        reads.cursor = cursor;
      }
    });

    for (const field of ['n', 'm']) it(`a sorted export across chunks matches the list; limits across a chunk boundary (${field})`, async () => {
      const sort = [{ [field]: { direction: 'desc', nulls: 'nullsLast' } }];
      const listed = (await listAll(code, { sort })).map((r) => r.id);
      const query = { format: 'jsonl', encoding: 'utf8', newline: 'lf', sort: JSON.stringify(sort) };
      const got = (await exportOk(code, query)).text.trimEnd().split('\n').map((l) => JSON.parse(l).id);
      assert.deepEqual(got, listed);
      for (const limit of [500, 501, 700, 1000]) {
        const r = await exportOk(code, { ...query, limit: String(limit) });
        assert.deepEqual(r.text.trimEnd().split('\n').map((l) => JSON.parse(l).id), listed.slice(0, limit), `limit ${limit}`);
      }
      const filter = JSON.stringify({ values: { [field]: { _lt: 5 } } });
      const filtered = (await listAll(code, { sort, filter: JSON.parse(filter) })).map((r) => r.id);
      assert.ok(filtered.length > 500);
      const r = await exportOk(code, { ...query, filter });
      assert.deepEqual(r.text.trimEnd().split('\n').map((l) => JSON.parse(l).id), filtered);
    });
  });

  describe('bad requests: 400 before any byte, in the error format', () => {
    let code: string;
    before(async () => {
      code = (await makeTable([{ code: 'v', type: 'text' }, { code: 'r', type: 'record' }])).code;
      await bulk(code, [{ values: { v: 'x' } }]);
    });

    it('format, encoding or newline missing, each alone: a 400 naming it', async () => {
      for (const name of ['format', 'encoding', 'newline'] as const) {
        const query: Record<string, string> = { format: 'csv', encoding: 'utf8', newline: 'lf' };
        delete query[name];
        const b = await expectExportError(code, query, 400);
        assert.deepEqual(paths(b), [name]);
        assert.match(b.message as string, new RegExp(name));
      }
    });

    it('all three missing: one 400 naming each', async () => {
      for (const query of [{}, { header: 'false' }, { limit: '5' }] as Record<string, string>[]) {
        const b = await expectExportError(code, query, 400);
        assert.deepEqual(paths(b).sort(), ['encoding', 'format', 'newline']);
        for (const name of ['format', 'encoding', 'newline']) assert.match(b.message as string, new RegExp(name));
      }
    });

    it('values not allowed: a 400 naming the parameter', async () => {
      const cases: [string, string][] = [
        ['format', 'xml'], ['format', 'CSV'], ['format', 'json'], ['format', ''],
        ['encoding', 'utf-8'], ['encoding', 'sjis'], ['encoding', 'UTF8'], ['encoding', 'shift_jis'], ['encoding', ''],
        ['newline', 'cr'], ['newline', 'CRLF'], ['newline', '\r\n'], ['newline', ''],
        ['header', 'yes'], ['header', '1'], ['header', 'TRUE'], ['header', ''], ['header', 'no'],
      ];
      for (const [name, value] of cases) {
        for (const format of ['csv', 'jsonl']) {
          const b = await expectExportError(code, { format, encoding: 'utf8', newline: 'lf', [name]: value }, 400);
          assert.deepEqual(paths(b), [name], `${name}=${JSON.stringify(value)}`);
          assert.match(b.message as string, new RegExp(name));
        }
      }
    });

    it('unknown and repeated parameters', async () => {
      for (const name of ['foo', 'pageSize', 'cursor', 'Format', 'delimiter', 'charset', 'offset']) {
        const b = await expectExportError(code, { ...OK, [name]: '1' }, 400);
        assert.deepEqual(paths(b), [name]);
        assert.match(b.message as string, new RegExp(name));
      }
      const given: Record<string, string> = { ...OK, header: 'true', limit: '1' };
      for (const name of Object.keys(given)) {
        const pairs = Object.entries(given);
        const b = await expectExportError(code, [...pairs, [name, given[name]]], 400);
        assert.deepEqual(paths(b), [name]);
        assert.match(b.message as string, new RegExp(name));
      }
      assert.equal((await exportRaw(code, Object.entries(given))).status, 200);
    });

    it('filter or sort that is not valid JSON, or not valid for the table', async () => {
      const cases: [string, string][] = [
        ['filter', '{'], ['filter', 'values'], ['filter', ''],
        ['filter', JSON.stringify({ values: { nope: { _eq: 1 } } })],
        ['filter', JSON.stringify({ values: { v: { _eq: 5 } } })],
        ['filter', JSON.stringify({ values: { v: { _like: 'x' } } })],
        ['filter', JSON.stringify({ values: { v: { _eq: null } } })],
        ['sort', '['], ['sort', ''],
        ['sort', JSON.stringify({ id: { direction: 'asc', nulls: 'nullsLast' } })],
        ['sort', JSON.stringify([{ v: { direction: 'up', nulls: 'nullsLast' } }])],
        ['sort', JSON.stringify([{ v: { direction: 'asc' } }])],
        ['sort', JSON.stringify([{ r: { direction: 'asc', nulls: 'nullsLast' } }])],
        ['sort', JSON.stringify([{ nope: { direction: 'asc', nulls: 'nullsLast' } }])],
      ];
      for (const [name, value] of cases) {
        const b = await expectExportError(code, { ...OK, [name]: value }, 400);
        assert.match(b.message as string, new RegExp(name === 'filter' ? 'filter|nope|v\\b' : 'sort|nope|\\br\\b|\\bv\\b'), `${name}=${value}`);
      }
    });

    it('every problem of the request reported at once', async () => {
      const b = await expectExportError(code, { format: 'xls', header: 'yes', limit: '0', filter: '{', sort: '[', bogus: '1' }, 400);
      assert.deepEqual(paths(b).sort(), ['bogus', 'encoding', 'filter', 'format', 'header', 'limit', 'newline', 'sort']);
    });

    it('an unknown table is a 404, even with bad parameters; no key is a 401', async () => {
      const b = await expectExportError('no_such_table', OK, 404);
      assert.match(b.message as string, /no_such_table/);
      await expectExportError('00000000-0000-4000-8000-000000000000', OK, 404);
      await expectExportError('no_such_table', {}, 404);
      const r = await t.get(`/api/tables/${code}/rows-export`, { query: OK, key: null });
      expectError(r, 401);
      assert.equal(r.headers['content-disposition'], undefined);
    });
  });
});
