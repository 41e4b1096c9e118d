import assert from 'node:assert/strict';
import { STATUS_CODES } from 'node:http';
import { after, before, it } from 'node:test';
import fc from 'fast-check';
import { TEST_KEY, type TestApp, eachDatabase, expectError, startApp, uploadFile } from '../support/harness.ts';
import { dataChecksum } from '../support/data-checksum.ts';
import { type RegisteredRoute, registeredRoutes, routeParams } from '../support/routes.ts';

/**
 * Hostile input at scale (issue 17, "Reliability and security"): requests made by fast-check for
 * every route the app registers (test/support/routes.ts), its parameters filled with ids and codes
 * of a fixture or with hostile segments, with mutated and arbitrary query strings, bodies, headers
 * and methods; huge and deeply nested values, invalid UTF-8, SQL and JSON fragments. Driven
 * in-process through Fastify's inject, in batches. After every request: no 5xx, and every 4xx in
 * the one error format (CONTRACT §3). After every batch whose writes were all refused: the data
 * (every row of every table, the service's own included) is as it was before the batch. A batch in
 * which some write succeeded (the fuzzer sends valid requests too) sets the new baseline, and the
 * fixture is made again when such a write damaged it.
 *
 * ROWHOUSE_FUZZ_RUNS sets the number of requests per database (default 50,000: about 40 s on SQLite
 * and 45-55 s on PostgreSQL on a loaded 2-core machine), ROWHOUSE_FUZZ_SEED the seed. A failure
 * names the request (method, URL, headers, body) and the answer; the diagnostics give the statuses
 * seen and where the time went.
 *
 * Nothing is tolerated: a body nesting deeper than 100 levels is a 400 before any route
 * (body-depth.ts), a URL over 16 KiB a 431 (Node's parser: inject does not go through it, so
 * test/http/wire-limits.test.ts shows it over a socket), and the 413s of over-limit bodies come in the error format.
 */

const RUNS = Number(process.env.ROWHOUSE_FUZZ_RUNS ?? 50_000);
const SEED = Number(process.env.ROWHOUSE_FUZZ_SEED ?? 20_261_123);
/** Requests between two looks at the data: small enough that most batches have no write succeed. */
const BATCH = 25;
/** Requests in flight at once within a batch. */
const PARALLEL = 4;
/** The limits of the app under test, small so that the fuzzer reaches past them cheaply. */
const MAX_BODY = 256 * 1024;
const MAX_FILE = 256 * 1024;

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'PROPFIND', 'SEARCH', 'MKCOL'];

// ---------------------------------------------------------------------------------------------
// JSON with parts written as text: numbers JSON.stringify cannot write (-0, 1e999), lone
// surrogates, and values nested deeper than JSON.stringify (or any recursion) could go.

class Raw {
  constructor(readonly text: string) {}
}
const raw = (text: string) => new Raw(text);

function jsonText(v: unknown): string {
  if (v instanceof Raw) return v.text;
  if (Array.isArray(v)) return `[${v.map(jsonText).join(',')}]`;
  if (v !== null && typeof v === 'object') return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${jsonText(x)}`).join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

/** A copy of a value made of plain objects, arrays and Raw parts (own keys such as __proto__ kept as keys). */
function copy(v: unknown): unknown {
  if (v instanceof Raw || v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(copy);
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) setKey(out, k, copy(x));
  return out;
}

/** Sets an own key, `__proto__` included. */
function setKey(o: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

// ---------------------------------------------------------------------------------------------
// Hostile material.

const SQL_BITS = [
  "' OR '1'='1", "'; DROP TABLE rh_tables; --", '" OR ""="', "1; SELECT pg_sleep(5); --", "x' UNION SELECT \"keyHash\" FROM rh_api_keys --",
  '%', '_', '\\', "\\'", '*/ /*', '$1', '?', ':name', 'NULL', "') or 1=1 --", 'rows_00000000000000000000000000000000', "';select 1;'",
];
const JSON_BITS = ['{"$gt":""}', '{"__proto__":{"admin":true}}', '[]', '{}', 'null', '"', '\\u0000', '{"_or":[]}', '1e999', '-0', ']', '}', '{"a":', '[[[['];
const TEXT_BITS = [
  '', ' ', '\u0000', 'a\u0000b', '\ud800', 'x\udfff', '\ufeff', '\u202e', '😀', '日本語', 'e\u0301', '\r\n', '\t', '../../etc/passwd', '%00', '%ZZ',
  'constructor', '__proto__', 'toString', 'hasOwnProperty', 'x'.repeat(129), 'a'.repeat(65), 'create-many', '0', '-1', 'NaN', 'Infinity',
  '00000000-0000-0000-0000-000000000000', 'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF', 'true', 'null',
];
const DATEISH = [
  '2024-02-30', '0000-01-01', '10000-01-01', '2024-01-01T00:00:00', '2024-01-01T24:00:00Z', '24:00:00', '23:59:60', '2024-13', '2024-00', 'now',
  '9999-12-31T23:59:59.999+14:00', '-000001-01-01T00:00:00Z', '+275760-09-13T00:00:00Z', '2024-01-01T00:00:00.123456789Z', '1e3', '2024-1-1',
];
const HOSTILE_STRINGS = [...SQL_BITS, ...JSON_BITS, ...TEXT_BITS, ...DATEISH];
const HOSTILE_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', '', ' ', 'id', 'createdAt', 'values', 'data', 'a.b', 'a[0]', "'; DROP", '\u0000', '\ud800', '😀', 'x'.repeat(300), '_and', '_not', 'or', 'eq'];

/** Any code points, lone surrogates and U+0000 among them (fc.string's 'binary' unit costs far more to draw). */
const anyText = (maxLength: number) =>
  fc
    .array(fc.oneof(fc.integer({ min: 0, max: 0x7f }), fc.integer({ min: 0x80, max: 0xffff }), fc.integer({ min: 0x10000, max: 0x10ffff })), { maxLength })
    .map((points) => String.fromCodePoint(...points));

const deepArray = (n: number) => raw('['.repeat(n) + ']'.repeat(n));
const deepObject = (n: number) => raw('{"a":'.repeat(n) + 'null' + '}'.repeat(n));
const deepMixed = (n: number) => raw('[{"k":'.repeat(n) + '"x"' + '}]'.repeat(n));
const deepArb = fc
  .tuple(fc.constantFrom(2, 17, 100, 999, 1001, 3000, 20_000, 100_000), fc.constantFrom(deepArray, deepObject, deepMixed))
  .map(([n, make]) => make(n));

const bigStringArb = fc.tuple(fc.constantFrom(1_000, 70_000, 300_000), fc.constantFrom('x', '😀', "'", '\\', '"', '\u0000')).map(([n, c]) => c.repeat(n));

const hostileScalarArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  { weight: 2, arbitrary: fc.constantFrom(null, true, false, 0, -1, 0.5, 1e308, -1e308, 5e-324, 2 ** 53 + 2, 1e21, 1001, 51) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(raw('-0'), raw('1e999'), raw('-1e999'), raw('1.0'), raw('123456789012345678901234567890'), raw('"\\ud800"'), raw('"\\u0000"'), raw('"a\\udc00b"')),
  },
  { weight: 2, arbitrary: anyText(30) },
);
const hostileValueArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 8, arbitrary: hostileScalarArb },
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: bigStringArb },
  { weight: 2, arbitrary: deepArb },
);
const hostileKeyArb = fc.oneof(fc.constantFrom(...HOSTILE_KEYS), anyText(12));

// ---------------------------------------------------------------------------------------------
// Mutations of a valid-shaped value: set a value, drop or add a key, wrap, repeat, retype.

interface Mutation {
  kind: 'set' | 'drop' | 'add' | 'wrap' | 'repeat' | 'retype' | 'whole';
  at: number;
  key: string;
  value: unknown;
  times: number;
}
const mutationArb: fc.Arbitrary<Mutation> = fc.record({
  kind: fc.constantFrom('set', 'set', 'set', 'drop', 'add', 'add', 'wrap', 'repeat', 'retype', 'whole'),
  at: fc.nat(),
  key: hostileKeyArb,
  value: hostileValueArb,
  times: fc.constantFrom(0, 2, 3, 1001),
});

type Container = Record<string, unknown> | unknown[];

/** Every place in a value: its container and key (Raw parts are leaves). */
function places(v: unknown, out: { parent: Container; key: string | number }[] = []): { parent: Container; key: string | number }[] {
  if (v instanceof Raw || v === null || typeof v !== 'object') return out;
  const entries: [string | number, unknown][] = Array.isArray(v) ? v.map((x, i) => [i, x]) : Object.entries(v);
  for (const [key, x] of entries) {
    out.push({ parent: v as Container, key });
    places(x, out);
  }
  return out;
}

function retype(v: unknown): unknown {
  if (typeof v === 'string') return Number.isNaN(Number(v)) ? v.length : Number(v);
  if (typeof v === 'number') return String(v);
  if (typeof v === 'boolean') return v ? 'true' : 0;
  if (v === null) return 'null';
  if (v instanceof Raw) return v.text;
  return jsonText(v);
}

function mutate(body: unknown, mutations: Mutation[]): unknown {
  const holder: Record<string, unknown> = { root: copy(body) };
  for (const m of mutations) {
    if (m.kind === 'whole') {
      holder.root = m.value;
      continue;
    }
    const spots = [{ parent: holder as Container, key: 'root' as string | number }, ...places(holder.root)];
    const { parent, key } = spots[m.at % spots.length];
    const target = (parent as Record<string | number, unknown>)[key];
    const put = (value: unknown) => {
      if (Array.isArray(parent)) parent[key as number] = value;
      else setKey(parent, String(key), value);
    };
    switch (m.kind) {
      case 'set':
        put(m.value);
        break;
      case 'drop':
        if (parent === holder) break;
        if (Array.isArray(parent)) parent.splice(key as number, 1);
        else delete parent[key as string];
        break;
      case 'add':
        if (Array.isArray(target)) target.push(m.value);
        else if (target !== null && typeof target === 'object' && !(target instanceof Raw)) setKey(target as Record<string, unknown>, m.key, m.value);
        else put({ [m.key]: target });
        break;
      case 'wrap':
        put(m.times % 2 === 0 ? [target] : Object.fromEntries([[m.key, target]]));
        break;
      case 'repeat': {
        // Past the body limit more copies change nothing but the time it takes (and can outgrow a string).
        const filler = Array.isArray(target) && target.length === 0 ? m.value : target;
        const times = Math.max(1, Math.min(m.times, Math.floor((MAX_BODY * 4) / (jsonText(filler).length + 1))));
        if (Array.isArray(target)) put(Array.from({ length: times }, (_, i) => (target.length > 0 ? copy(target[i % target.length]) : m.value)));
        else put(Array.from({ length: times }, () => copy(target)));
        break;
      }
      case 'retype':
        put(retype(target));
        break;
    }
  }
  return holder.root;
}

/** Mutations of a text: cut, insert a character that breaks JSON or CSV, a BOM, padding, invalid UTF-8. */
interface TextMutation {
  kind: 'cut' | 'insert' | 'bom' | 'pad' | 'bytes';
  at: number;
  what: string;
}
const textMutationArb: fc.Arbitrary<TextMutation> = fc.record({
  kind: fc.constantFrom('cut', 'insert', 'insert', 'bom', 'pad', 'bytes'),
  at: fc.nat(),
  what: fc.constantFrom(',', '}', ']', '"', '\\', '\u0000', '\ud800', '\n', '\r', '\t', ';', "'", '\u2028', ':', '{'),
});

function mutateText(text: string, m: TextMutation): string | Buffer {
  const at = text.length === 0 ? 0 : m.at % text.length;
  switch (m.kind) {
    case 'cut':
      return text.slice(0, at);
    case 'insert':
      return text.slice(0, at) + m.what + text.slice(at);
    case 'bom':
      return `\ufeff${text}`;
    case 'pad':
      return ' '.repeat(m.at % 5000) + text;
    case 'bytes': {
      // Bytes that are no UTF-8: a lone continuation byte, an overlong form, a cut sequence, 0xFF.
      const bytes = Buffer.from(text);
      const bad = [[0x80], [0xc0, 0xaf], [0xe2, 0x82], [0xff], [0xed, 0xa0, 0x80]][m.at % 5];
      const cut = bytes.length === 0 ? 0 : at % (bytes.length + 1);
      return Buffer.concat([bytes.subarray(0, cut), Buffer.from(bad), bytes.subarray(cut)]);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The fixture: three tables (every field type; no fields; no code), rows, one file attached and
// one uploaded, an item of each writable resource, and keys that are valid, revoked and expired.

interface FieldSpec {
  code: string;
  type: string;
  required?: boolean;
  options?: Record<string, unknown>;
}

const FIELDS: FieldSpec[] = [
  { code: 'title', type: 'text', required: true, options: { maxLength: 100 } },
  { code: 'note', type: 'text', options: { indexed: true } },
  { code: 'amount', type: 'number', options: { min: -1000, max: 1_000_000, indexed: true } },
  { code: 'flag', type: 'boolean' },
  { code: 'at', type: 'dateTime' },
  { code: 'day', type: 'date' },
  { code: 'clock', type: 'time' },
  { code: 'month', type: 'yearMonth' },
  { code: 'status', type: 'select', options: { choices: ['open', 'done', '日本', "it's"] } },
  { code: 'meta', type: 'record' },
  { code: 'tags', type: 'list' },
  { code: 'scan', type: 'file' },
];
const PLAIN_FIELDS: FieldSpec[] = [{ code: 'n', type: 'number', required: true }];

const ROWS = [
  { id: 'r1', values: { title: 'First', amount: 1, flag: true, at: '2024-01-01T00:00:00Z', day: '2024-02-29', clock: '09:30:00', month: '2024-01', status: 'open', meta: { k: 1 }, tags: ['a', 1, true] } },
  { id: 'R-2', values: { title: "Robert'); DROP TABLE rh_tables;--", note: '%_\\', amount: -1.5, status: "it's" } },
  { id: 'a.b:c@d_e-f', values: { title: '日本語 😀', note: '{"$gt": ""}', flag: false, tags: [[1], { a: null }] } },
  { id: '0', values: { title: 'zero', amount: 0, meta: {}, tags: [] } },
  { id: 'r5', values: { title: 'five', at: '2024-06-30T12:00:00-05:30', day: '0001-01-01', clock: '23:59:59', month: '9999-12', status: '日本' } },
  { id: 'r6', values: { title: 'six', note: 'x'.repeat(3000), amount: 1_000_000 } },
  { id: 'r7', values: { title: 'seven', amount: -1000, status: 'done' } },
  { id: 'r8', values: { title: 'eight' } },
];

interface TableInfo {
  id: string;
  code: string | null;
  fields: (FieldSpec & { id: string; name: string })[];
}

interface Fixture {
  all: TableInfo;
  bare: TableInfo;
  plain: TableInfo;
  rowIds: string[];
  plainRowIds: string[];
  fileId: string;
  uploadId: string;
  /** Path and query of the upload URL (row r-up) and of the attached file's download URL. */
  uploadUrl: string;
  downloadUrl: string;
  /** Query strings of second pages of `all`. */
  pages: Record<string, string>[];
  /** Ids of the fixture's items, by resource. */
  items: Record<string, string[]>;
  keys: { fixture: string; revoked: string; expired: string };
  /** The tables as made (see inspect()). */
  tablesPrint: string;
}

async function ok(reply: Promise<{ status: number; text: string; body: any }>, status = [200, 201]): Promise<any> {
  const r = await reply;
  assert.ok(status.includes(r.status), `fixture: ${r.status} ${r.text.slice(0, 300)}`);
  return r.body;
}

const EVERYTHING = { paging: { limit: 1000 } };
const RESOURCES = ['environment-variables', 'flows', 'api-keys', 'members'];

/** Deletes the items of these resources, but the owner member and the test key. */
async function clear(t: TestApp, resources: string[]): Promise<void> {
  for (const resource of resources) {
    const items: { id: string; prefix?: string }[] = (await ok(t.get(`/api/${resource}`, { query: EVERYTHING }))).data;
    const ids = items.filter((i) => i.id !== t.ownerId && i.prefix !== TEST_KEY.slice(0, 8)).map((i) => i.id);
    if (ids.length > 0) await ok(t.delete(`/api/${resource}/delete-many`, ids));
  }
}

/** The whole fixture, made again from nothing. */
async function build(t: TestApp): Promise<Fixture> {
  await clear(t, ['tables', ...RESOURCES]);
  const table = async (body: Record<string, unknown>): Promise<TableInfo> => {
    const made = await ok(t.post('/api/tables', body));
    return { id: made.id, code: made.code, fields: made.fields };
  };
  const all = await table({ code: 'fz_all', name: 'Everything', fields: FIELDS });
  const bare = await table({ code: 'fz-bare', name: 'No fields', fields: [] });
  const plain = await table({ name: 'No code', fields: PLAIN_FIELDS });
  const issued = await ok(t.post('/api/tables/fz_all/rows/r-up/file-upload-url', { count: 1 }));
  const upload = new URL(issued.data[0].url);
  await ok(t.request('PUT', upload.pathname + upload.search, { raw: 'uploaded', headers: { 'content-type': 'text/plain' }, key: null }));

  const rowsMade = { all, plain, rowIds: ROWS.map((r) => r.id), plainRowIds: ['p1', 'p2', 'p3'] } as Fixture;
  await makeRows(t, rowsMade);
  const pages: Record<string, string>[] = [];
  for (const query of [
    { pageSize: '2' },
    { pageSize: '2', sort: JSON.stringify([{ amount: { direction: 'desc', nulls: 'nullsLast' } }]) },
    { pageSize: '1', filter: JSON.stringify({ values: { title: { _gte: 'a' } } }), sort: JSON.stringify([{ title: { direction: 'asc', nulls: 'nullsFirst' } }]) },
  ]) {
    const page = await ok(t.get('/api/tables/fz_all/rows', { query }));
    pages.push(Object.fromEntries(new URL(page.nextUrl).searchParams));
  }
  const fx: Fixture = {
    all,
    bare,
    plain,
    rowIds: ROWS.map((r) => r.id),
    plainRowIds: ['p1', 'p2', 'p3'],
    fileId: '',
    uploadId: issued.data[0].id,
    uploadUrl: upload.pathname + upload.search,
    downloadUrl: '',
    pages,
    items: { tables: [all.id, bare.id, plain.id] },
    keys: { fixture: '', revoked: '', expired: '' },
    tablesPrint: '',
  };
  await attachFile(t, fx);
  await makeItems(t, fx);
  fx.tablesPrint = JSON.stringify(tablesOf((await ok(t.get('/api/tables', { query: EVERYTHING }))).data, fx));
  await tidy(t);
  return fx;
}

/** Keeps what successful writes leave behind from growing: the change log, released and unattached files. */
async function tidy(t: TestApp): Promise<void> {
  await t.app.changes?.purge(t.database.db, new Date(Date.now() + 1000).toISOString());
  await t.app.files.sweep();
}

/** The fixture's rows, made again as they were where they were deleted or changed (an upsert). */
async function makeRows(t: TestApp, fx: Fixture): Promise<void> {
  await ok(t.post(`/api/tables/${fx.all.id}/rows-bulk`, { data: ROWS, options: { upsert: true } }));
  await ok(t.post(`/api/tables/${fx.plain.id}/rows-bulk`, { data: fx.plainRowIds.map((id, i) => ({ id, values: { n: i } })), options: { upsert: true } }));
}

/** A file uploaded for row r1 and attached to its field scan; its download URL. */
async function attachFile(t: TestApp, fx: Fixture): Promise<void> {
  fx.fileId = await uploadFile(t, 'fz_all', 'r1', 'attached bytes', 'application/pdf');
  const r1 = await ok(t.patch('/api/tables/fz_all/rows/r1', { values: { scan: { id: fx.fileId, name: 'scan.pdf' } } }));
  const download = new URL(r1.values.scan.url);
  fx.downloadUrl = download.pathname + download.search;
}

/** One item of each writable resource, and keys that are valid, revoked and expired. */
async function makeItems(t: TestApp, fx: Fixture): Promise<void> {
  const env = await ok(t.post('/api/environment-variables', { name: 'FZ_VAR', value: 'v', description: "it's" }));
  const flow = await ok(t.post('/api/flows', { name: 'fz flow', definition: {} }));
  const member = await ok(t.post('/api/members', { name: 'Fz Member', email: 'fz@example.com' }));
  const fixtureKey = await ok(t.post('/api/api-keys', { name: 'fz key', memberId: member.id }));
  const revoked = await ok(t.post('/api/api-keys', { name: 'fz revoked' }));
  await ok(t.put(`/api/api-keys/${revoked.id}`, { revokedAt: new Date(Date.now() - 1000).toISOString() }));
  const expired = await ok(t.post('/api/api-keys', { name: 'fz expired', expiresAt: '2020-01-01T00:00:00Z' }));
  Object.assign(fx.items, { 'environment-variables': [env.id], flows: [flow.id], members: [member.id], 'api-keys': [fixtureKey.id, revoked.id, expired.id] });
  fx.keys = { fixture: fixtureKey.key, revoked: revoked.key, expired: expired.key };
}

/**
 * The fixture's tables as the API answers them, as far as the fuzzer relies on them: their codes,
 * and their fields' codes. A field added, or options changed, by a successful write does no harm.
 */
function tablesOf(tables: any[], fx: Fixture): unknown[] {
  return fx.items.tables.map((id, i) => {
    const table = tables.find((x) => x.id === id);
    const made = [fx.all, fx.bare, fx.plain][i].fields;
    return table ? [table.code, made.map((f) => table.fields.find((g: any) => g.id === f.id)?.code ?? null)] : null;
  });
}

/**
 * After a batch in which some write succeeded: what of the fixture is no longer as the fuzzer
 * relies on it. The tables with their fields and the attached file, and whether successful writes
 * piled up, need it made again; rows and items can be made again on their own.
 */
async function inspect(t: TestApp, fx: Fixture): Promise<{ remake: boolean; rows: boolean; file: boolean; items: boolean }> {
  const tables: any[] = (await ok(t.get('/api/tables', { query: EVERYTHING }))).data;
  const rowIds = async (table: string) => ((await ok(t.get(`/api/tables/${table}/rows`, { query: { pageSize: '200' } }), [200, 404])).data ?? []).map((r: any) => r.id);
  const r1 = await t.get(`/api/tables/${fx.all.id}/rows/r1`);
  const allRows = await rowIds(fx.all.id);
  const plainRows = await rowIds(fx.plain.id);
  let count = tables.length + allRows.length;
  let items = true;
  for (const resource of RESOURCES) {
    const data: any[] = (await ok(t.get(`/api/${resource}`, { query: EVERYTHING }))).data;
    count += data.length;
    items &&= fx.items[resource].every((id, i) => {
      const item = data.find((x) => x.id === id);
      // The api-keys are valid, revoked, expired, in that order.
      return item && (resource !== 'api-keys' || (item.revokedAt !== null) === (i === 1) && (item.expiresAt !== null) === (i === 2));
    });
  }
  return {
    remake: JSON.stringify(tablesOf(tables, fx)) !== fx.tablesPrint || count > 150,
    file: r1.body?.values?.scan?.id === fx.fileId,
    rows: fx.rowIds.every((id) => allRows.includes(id)) && fx.plainRowIds.every((id) => plainRows.includes(id)),
    items,
  };
}

// ---------------------------------------------------------------------------------------------
// Valid-shaped input, from the fixture's fields and resources.

const NAME_CHARS = fc.constantFrom(...'abcXYZ019_'.split(''));
const codeArb = fc.tuple(fc.constantFrom('a', 'Z', 'q'), fc.array(NAME_CHARS, { maxLength: 8 })).map(([h, t]) => h + t.join(''));
const rowIdArb = fc.oneof(fc.constantFrom('r1', 'R-2', 'a.b:c@d_e-f', '0', 'new-1', 'p1'), codeArb);
const safeText = fc.oneof(fc.constantFrom('hello', "O'Brien", '50% off_sale\\', '日本語', '😀', 'x'.repeat(100)), fc.string({ maxLength: 20 }));

function valueArb(f: FieldSpec, fx: Fixture): fc.Arbitrary<unknown> {
  switch (f.type) {
    case 'text':
      return f.options?.maxLength ? safeText.map((s) => s.slice(0, 50)) : safeText;
    case 'number':
      return fc.oneof(fc.integer({ min: -1000, max: 1000 }), fc.double({ min: -1000, max: 1e6, noNaN: true }));
    case 'boolean':
      return fc.boolean();
    case 'dateTime':
      return fc.constantFrom('2024-01-01T00:00:00Z', '2024-06-30T12:00:00-05:30', '1999-12-31T23:59:59.999+0900', '2024-01-01T00:00Z');
    case 'date':
      return fc.constantFrom('2024-02-29', '0001-01-01', '9999-12-31');
    case 'time':
      return fc.constantFrom('00:00:00', '23:59:59', '12:30:00');
    case 'yearMonth':
      return fc.constantFrom('2024-01', '0001-01', '9999-12');
    case 'select':
      return fc.constantFrom(...((f.options?.choices as string[]) ?? ['x']));
    case 'record':
      return fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 });
    case 'list':
      return fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 });
    case 'file':
      return fc.constantFrom({ id: fx.fileId, name: 'scan.pdf' }, { id: fx.uploadId, name: 'up.txt' });
    default:
      return fc.constant(null);
  }
}

function valuesArb(fields: FieldSpec[], fx: Fixture, all: boolean): fc.Arbitrary<Record<string, unknown>> {
  const model = Object.fromEntries(fields.map((f) => [f.code, fc.option(valueArb(f, fx), { freq: 6 })]));
  return fc.record(model, { requiredKeys: all ? fields.filter((f) => f.required).map((f) => f.code) : [] }) as fc.Arbitrary<Record<string, unknown>>;
}

/** Operators by field type, as the row filter takes them (besides _isNull). */
const OPS: Record<string, string[]> = {
  text: ['_eq', '_gt', '_gte', '_lt', '_lte', '_contains', '_startsWith', '_endsWith'],
  select: ['_eq', '_gt', '_lte', '_contains', '_startsWith', '_endsWith'],
  number: ['_eq', '_gt', '_gte', '_lt', '_lte'],
  dateTime: ['_eq', '_gt', '_lt'],
  date: ['_eq', '_gte'],
  time: ['_eq', '_lt'],
  yearMonth: ['_eq', '_lte'],
  boolean: ['_eq'],
  list: ['_contains'],
  record: [],
  file: [],
};

function conditionArb(f: FieldSpec, fx: Fixture): fc.Arbitrary<Record<string, unknown>> {
  const ops = OPS[f.type] ?? [];
  const scalar = f.type === 'list' ? fc.oneof(fc.string({ maxLength: 4 }), fc.integer(), fc.boolean()) : valueArb(f, fx);
  const op = ops.length > 0 ? fc.tuple(fc.constantFrom(...ops), scalar).map(([o, v]) => ({ [o]: v })) : fc.constant({});
  return fc.oneof(op, fc.boolean().map((b) => ({ _isNull: b })));
}

function rowFilterArb(fields: FieldSpec[], fx: Fixture): fc.Arbitrary<unknown> {
  const leaf = fc.oneof(
    fc.constantFrom(...fields).chain((f) => conditionArb(f, fx).map((c) => ({ values: { [f.code]: c } }))),
    fc.constantFrom({ id: { _startsWith: 'r' } }, { createdAt: { _gte: '2020-01-01T00:00:00Z' } }, { updatedBy: { _isNull: false } }),
  );
  if (fields.length === 0) return fc.constantFrom({}, { id: { _eq: 'x' } });
  return fc.letrec<{ filter: unknown }>((tie) => ({
    filter: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      leaf,
      fc.array(tie('filter'), { minLength: 1, maxLength: 3 }).map((items) => ({ _and: items })),
      fc.array(tie('filter'), { minLength: 1, maxLength: 3 }).map((items) => ({ _or: items })),
      tie('filter').map((item) => ({ _not: item })),
    ),
  })).filter;
}

function rowSortArb(fields: FieldSpec[]): fc.Arbitrary<unknown> {
  const keys = ['id', 'createdAt', 'updatedAt', 'createdBy', ...fields.filter((f) => !['record', 'list', 'file'].includes(f.type)).map((f) => f.code)];
  return fc.uniqueArray(fc.constantFrom(...keys), { minLength: 1, maxLength: 4 }).chain((ks) =>
    fc.tuple(...ks.map(() => fc.tuple(fc.constantFrom('asc', 'desc'), fc.constantFrom('nullsFirst', 'nullsLast')))).map((dirs) =>
      ks.map((k, i) => ({ [k]: { direction: dirs[i][0], nulls: dirs[i][1] } })),
    ),
  );
}

/** A resource's attributes: what a valid list filter, sorting and item are made of. */
const RESOURCE_ATTRS: Record<string, Record<string, 'text' | 'timestamp' | 'boolean' | 'json'>> = {
  'environment-variables': { name: 'text', value: 'text', description: 'text' },
  flows: { name: 'text', description: 'text', enabled: 'boolean', definition: 'json' },
  'flow-deliveries': { flowId: 'text', status: 'text', sequence: 'text', nextAttemptAt: 'timestamp' },
  members: { name: 'text', email: 'text' },
  'api-keys': { name: 'text', memberId: 'text', prefix: 'text', expiresAt: 'timestamp', lastUsedAt: 'timestamp', revokedAt: 'timestamp' },
  tables: { code: 'text', name: 'text', description: 'text' },
};
const SYSTEM_ATTRS = { id: 'text', createdAt: 'timestamp', updatedAt: 'timestamp', createdBy: 'text', updatedBy: 'text' } as const;

function resourceFilterArb(resource: string): fc.Arbitrary<unknown> {
  const attrs: Record<string, string> = { ...SYSTEM_ATTRS, ...RESOURCE_ATTRS[resource] };
  const cmp = fc.constantFrom(...Object.entries(attrs)).chain(([name, type]) => {
    const value =
      type === 'timestamp' ? fc.constantFrom('2024-01-01T00:00:00Z', '2030-01-01T00:00:00+09:00')
      : type === 'boolean' ? fc.boolean()
      : type === 'json' ? fc.constant(null)
      : safeText;
    const ops = type === 'json' ? ['is', 'isNot'] : type === 'boolean' ? ['eq', 'neq', 'is'] : type === 'timestamp' ? ['eq', 'gt', 'lte', 'in', 'is'] : ['eq', 'neq', 'like', 'iLike', 'notLike', 'in', 'notIn', 'gte', 'isNot'];
    return fc.tuple(fc.constantFrom(...ops), value).map(([op, v]) => ({ [name]: { [op]: op === 'in' || op === 'notIn' ? [v] : op === 'is' || op === 'isNot' ? null : v } }));
  });
  return fc.letrec<{ filter: unknown }>((tie) => ({
    filter: fc.oneof(
      { depthSize: 'small' },
      cmp,
      fc.array(tie('filter'), { minLength: 1, maxLength: 3 }).map((items) => ({ and: items })),
      fc.array(tie('filter'), { minLength: 1, maxLength: 3 }).map((items) => ({ or: items })),
    ),
  })).filter;
}

function resourceItemArb(resource: string, fx: Fixture, forUpdate: boolean): fc.Arbitrary<Record<string, unknown>> {
  const keys = (model: Record<string, fc.Arbitrary<unknown>>, required: string[]) =>
    fc.record(model, { requiredKeys: forUpdate ? [] : required }) as fc.Arbitrary<Record<string, unknown>>;
  switch (resource) {
    case 'environment-variables':
      return keys({ name: codeArb.map((c) => `FZ_${c}`), value: safeText, description: fc.option(safeText) }, ['name', 'value']);
    case 'flows':
      return keys(
        {
          name: safeText.filter((s) => s.length > 0),
          description: fc.option(safeText),
          enabled: fc.boolean(),
          definition: fc.oneof(
            fc.constant({}),
            fc.record({
              trigger: fc.record({ table: fc.constantFrom('fz_all', fx.all.id, 'nope'), events: fc.subarray(['create', 'update', 'delete']), filter: rowFilterArb(FIELDS, fx) }),
              webhook: fc.record({ url: fc.constantFrom('https://example.com/hook', 'http://127.0.0.1/x', 'ftp://x', 'https://[::1]/'), headers: fc.dictionary(codeArb, safeText, { maxKeys: 2 }) }),
            }),
          ),
        },
        ['name'],
      );
    case 'members':
      return keys({ name: safeText.filter((s) => s.length > 0), email: fc.option(fc.constantFrom('a@b.c', 'fz@example.com', 'no-at')) }, ['name']);
    case 'api-keys':
      return forUpdate
        ? keys({ name: safeText, expiresAt: fc.option(fc.constantFrom('2999-01-01T00:00:00Z', '2020-01-01T00:00:00Z')), revokedAt: fc.option(fc.constantFrom('2999-01-01T00:00:00Z')) }, [])
        : keys({ name: safeText.filter((s) => s.length > 0), memberId: fc.constantFrom(...fx.items.members), expiresAt: fc.option(fc.constant('2999-01-01T00:00:00Z')) }, ['name']);
    case 'tables': {
      const field = fc.record(
        { code: codeArb, type: fc.constantFrom('text', 'number', 'boolean', 'date', 'select', 'list', 'record', 'file', 'nope'), required: fc.boolean(), options: fc.constantFrom({}, { indexed: true }, { choices: ['a'] }, { maxLength: 3 }) },
        { requiredKeys: ['code', 'type'] },
      );
      // Mostly every field kept (a PUT that leaves one out deletes it, and the fixture is made again).
      const kept = (fs: TableInfo['fields']) => fs.map((f) => ({ id: f.id, code: f.code, required: f.required }));
      const existing = fc.oneof({ weight: 4, arbitrary: fc.constant(kept(fx.all.fields)) }, { weight: 1, arbitrary: fc.subarray(fx.all.fields).map(kept) });
      return forUpdate
        ? keys({ name: safeText, description: fc.option(safeText), code: fc.constantFrom('fz_all', 'fz-bare'), fields: fc.tuple(existing, fc.array(field, { maxLength: 2 })).map(([a, b]) => [...a, ...b]) }, [])
        : keys({ code: codeArb, name: safeText.filter((s) => s.length > 0), description: fc.option(safeText), fields: fc.array(field, { maxLength: 4 }) }, ['name']);
    }
    default:
      return fc.constant({});
  }
}

/** A valid-shaped body for the route, or null where the route takes none. */
function shapedBodyArb(method: string, url: string, fx: Fixture): fc.Arbitrary<unknown> | null {
  const table = fx.all.fields;
  const create = fc.record(
    { id: rowIdArb, values: valuesArb(table, fx, true), options: fc.record({ upsert: fc.boolean() }) },
    { requiredKeys: ['values'] },
  );
  const patch = fc.record({ values: valuesArb(table, fx, false) });
  const key = `${method} ${url}`;
  switch (key) {
    case 'POST /api/tables/:table/rows':
      return create;
    case 'PATCH /api/tables/:table/rows/:rowId':
      return patch;
    case 'POST /api/tables/:table/rows-bulk':
      return fc.record({ data: fc.array(create, { minLength: 1, maxLength: 3 }), options: fc.record({ upsert: fc.boolean() }) }, { requiredKeys: ['data'] });
    case 'PATCH /api/tables/:table/rows-bulk':
      return fc.record({ data: fc.array(fc.tuple(rowIdArb, patch).map(([id, p]) => ({ id, ...p })), { minLength: 1, maxLength: 3 }) });
    case 'DELETE /api/tables/:table/rows-bulk':
      return fc.record({ ids: fc.array(rowIdArb, { minLength: 1, maxLength: 3 }) });
    case 'POST /api/rows-batch': {
      const tableId = fc.constantFrom('fz_all', fx.all.id, fx.plain.id, 'fz-bare', 'nope');
      const op = fc.oneof(
        fc.tuple(tableId, create).map(([t, c]) => ({ type: 'create', tableId: t, ...c })),
        fc.tuple(tableId, rowIdArb, patch).map(([t, id, p]) => ({ type: 'update', tableId: t, id, ...p })),
        fc.tuple(tableId, rowIdArb).map(([t, id]) => ({ type: 'delete', tableId: t, id })),
      );
      return fc.record({ operations: fc.array(op, { minLength: 1, maxLength: 4 }) });
    }
    case 'POST /api/tables/:table/rows/:rowId/file-upload-url':
      return fc.record({ count: fc.integer({ min: 1, max: 3 }) });
    case 'POST /api/tables/:table/rows-import':
    case 'PUT /files/:tableId/:rowId/:fileId':
    case 'POST /api/flow-deliveries/:id/retry':
      return null;
  }
  const resource = /^\/api\/([a-z-]+)(?:\/(:id|create-many|update-many|delete-many))?$/.exec(url);
  if (!resource || method === 'GET' || method === 'HEAD') return null;
  const [, name, tail] = resource;
  const ids = fx.items[name] ?? [];
  if (method === 'POST' && tail === undefined) return resourceItemArb(name, fx, false);
  if (method === 'PUT' && tail === ':id') return resourceItemArb(name, fx, true);
  if (method === 'POST' && tail === 'create-many') return fc.array(resourceItemArb(name, fx, false), { maxLength: 3 });
  if (method === 'PUT' && tail === 'update-many') {
    return fc.array(fc.tuple(fc.constantFrom(...ids, '00000000-0000-4000-8000-000000000000'), resourceItemArb(name, fx, true)).map(([id, item]) => ({ id, ...item })), { maxLength: 3 });
  }
  if (method === 'DELETE' && tail === 'delete-many') return fc.array(fc.constantFrom(...ids, '00000000-0000-4000-8000-000000000000'), { maxLength: 3 });
  return null;
}

// ---------------------------------------------------------------------------------------------
// Requests.

interface FuzzRequest {
  /** The route it was made for: method and pattern. */
  route: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string | Buffer;
}

/** Characters a request line cannot carry raw, percent-encoded (their UTF-8; a lone surrogate as U+FFFD). */
const escapeUrl = (s: string) =>
  /^[\x21-\x22\x24-\x7e]*$/.test(s) ? s : s.replace(/[^\x21-\x7e]|#/gu, (c) => [...Buffer.from(c)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''));
/** A value as a client percent-encodes it (a lone surrogate as U+FFFD, as any UTF-8 encoder writes it). */
const enc = (s: string) => encodeURIComponent(s.isWellFormed() ? s : s.toWellFormed());

const hostileSegmentArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...HOSTILE_STRINGS).map(enc) },
  { weight: 3, arbitrary: fc.constantFrom('%ZZ', '%FF', '%C0%AF', '%ED%A0%80', '%00', '..', '%2e%2e', '%2F', '%252F', '%', ';', '*', '%3F', '%23', '~', '$', '', '%E6%97%A5') },
  { weight: 1, arbitrary: fc.constantFrom(1023, 1024, 1025, 5000).map((n) => 'x'.repeat(n)) },
  { weight: 2, arbitrary: anyText(20).map(enc) },
  { weight: 1, arbitrary: fc.uuid().map((u) => u.toUpperCase()) },
);

/** Valid values of a path parameter, from the fixture. */
function paramPool(name: string, url: string, fx: Fixture): string[] {
  switch (name) {
    case 'table':
      return [fx.all.id, 'fz_all', fx.all.id.toUpperCase(), 'fz-bare', fx.bare.id, fx.plain.id];
    case 'tableId':
      return [fx.all.id, fx.plain.id, fx.bare.id];
    case 'rowId':
      return [...fx.rowIds, 'r-up', 'new-row', ...fx.plainRowIds];
    case 'fileId':
      return [fx.fileId, fx.uploadId];
    case 'id': {
      const resource = url.split('/')[2];
      if (resource === 'tables') return [fx.all.id, 'fz_all', 'fz-bare', fx.plain.id];
      return fx.items[resource] ?? ['00000000-0000-4000-8000-000000000000'];
    }
    default:
      return ['x'];
  }
}

const PATH_TWEAKS = ['none', 'none', 'none', 'none', 'none', 'none', 'append', 'slash', 'double', 'case', 'encode', 'dot'] as const;

function pathArb(url: string, fx: Fixture, method: string): fc.Arbitrary<string> {
  const params = routeParams(url);
  // A DELETE of one item needs nothing more than a valid id to succeed: fewer of those, or the
  // fixture is mostly being made again.
  const valid = method === 'DELETE' && /:(id|rowId)$/.test(url) ? 2 : 7;
  const values = params.map((p) => fc.oneof({ weight: valid, arbitrary: fc.constantFrom(...paramPool(p, url, fx)).map(enc) }, { weight: 3, arbitrary: hostileSegmentArb }));
  return fc.tuple(fc.tuple(...values), fc.constantFrom(...PATH_TWEAKS), hostileSegmentArb).map(([filled, tweak, extra]) => {
    let i = 0;
    let path = url.replace(/:[A-Za-z]+/g, () => filled[i++]);
    if (tweak === 'append') path += `/${extra}`;
    else if (tweak === 'slash') path += '/';
    else if (tweak === 'double') path = path.replace('/', '//');
    else if (tweak === 'case') path = path.toUpperCase();
    else if (tweak === 'encode') path = path.replace(/[a-z]/, (c) => `%${c.charCodeAt(0).toString(16)}`);
    else if (tweak === 'dot') path = `${path}/../${path.split('/').pop()}`;
    return path;
  });
}

type Query = [string, string][];

/**
 * A JSON query parameter: valid-shaped, mutated, or hostile text; with `widen`, also a list of
 * hundreds or thousands of copies of one valid-shaped part (empty ones too) made into one value.
 */
function jsonParamArb(shaped: fc.Arbitrary<unknown>, widen?: (parts: unknown[]) => unknown): fc.Arbitrary<string | Buffer> {
  const wide = widen
    ? fc.tuple(fc.oneof(shaped, fc.constant({})), fc.constantFrom(300, 1001, 3000)).map(([part, n]) => jsonText(widen(Array.from({ length: n }, () => part))))
    : shaped.map(jsonText);
  return fc.oneof(
    { weight: 4, arbitrary: shaped.map(jsonText) },
    { weight: 1, arbitrary: wide },
    { weight: 4, arbitrary: fc.tuple(shaped, fc.array(mutationArb, { minLength: 1, maxLength: 2 })).map(([v, ms]) => jsonText(mutate(v, ms))) },
    { weight: 1, arbitrary: fc.tuple(shaped, textMutationArb).map(([v, m]) => mutateText(jsonText(v), m)) },
    { weight: 2, arbitrary: hostileValueArb.map(jsonText) },
    { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  );
}

const asText = (v: string | Buffer) => (typeof v === 'string' ? v : v.toString('latin1'));

/** The query a route reads, valid-shaped and hostile. */
function queryArb(method: string, url: string, fx: Fixture): fc.Arbitrary<Query> {
  const rows = url === '/api/tables/:table/rows';
  const resource = /^\/api\/([a-z-]+)(\/:id)?$/.exec(url);
  /** A parameter, left out one time in `freq`: a route's required ones mostly given, so that what follows them is reached. */
  const param = (name: string, value: fc.Arbitrary<string | Buffer>, freq = 2) => fc.option(value.map((v): [string, string] => [name, asText(v)]), { freq });
  const some = (...params: fc.Arbitrary<[string, string] | null>[]) => fc.tuple(...params).map((ps) => ps.filter((p): p is [string, string] => p !== null));
  let own: fc.Arbitrary<Query> = fc.constant([]);
  if (rows && (method === 'GET' || method === 'HEAD')) {
    own = fc.oneof(
      some(
        param('pageSize', fc.constantFrom('1', '2', '200', '201', '0', '-1', '1.5', '1e2', ' 2', '0x10', '99999999999999999999')),
        param('filter', jsonParamArb(rowFilterArb(fx.all.fields, fx), (parts) => ({ _or: parts }))),
        param('sort', jsonParamArb(rowSortArb(fx.all.fields), (parts) => parts)),
      ),
      // A real second page, as given or with one part changed.
      fc.tuple(fc.constantFrom(...fx.pages), fc.constantFrom('keep', 'cursor', 'filter', 'sort', 'drop'), fc.nat()).map(([page, change, n]) => {
        const q = { ...page };
        if (change === 'cursor') q.cursor = q.cursor.slice(0, n % q.cursor.length) + 'A' + q.cursor.slice((n % q.cursor.length) + 1);
        else if (change === 'filter') q.filter = '{"values":{"title":{"_gte":"b"}}}';
        else if (change === 'sort') q.sort = '[{"id":{"direction":"desc","nulls":"nullsLast"}}]';
        else if (change === 'drop') delete q.pageSize;
        return Object.entries(q);
      }),
    );
  } else if (url === '/api/tables/:table/rows-export' && (method === 'GET' || method === 'HEAD')) {
    own = some(
      param('format', fc.constantFrom('csv', 'tsv', 'jsonl', 'csv', 'tsv', 'jsonl', 'xml', ''), 8),
      param('encoding', fc.constantFrom('utf8', 'utf8Bom', 'shiftJis', 'utf8', 'utf8Bom', 'shiftJis', 'latin1'), 8),
      param('newline', fc.constantFrom('lf', 'crlf', 'lf', 'crlf', 'cr'), 8),
      param('filter', jsonParamArb(rowFilterArb(fx.all.fields, fx), (parts) => ({ _and: parts }))),
      param('sort', jsonParamArb(rowSortArb(fx.all.fields), (parts) => parts)),
      param('header', fc.constantFrom('true', 'false', '1')),
      param('limit', fc.constantFrom('1', '1000', '1001', '0', 'x')),
    );
  } else if (resource && (method === 'GET' || method === 'HEAD')) {
    const name = resource[1];
    const relations = param('relations', jsonParamArb(fc.subarray(['createdByMember', 'updatedByMember', 'member']), (parts) => parts));
    own = resource[2]
      ? some(relations)
      : some(
          param('paging', jsonParamArb(fc.record({ limit: fc.integer({ min: 1, max: 1000 }), offset: fc.nat(100) }, { requiredKeys: [] }))),
          param('filter', jsonParamArb(resourceFilterArb(name), (parts) => ({ or: parts }))),
          param('sorting', jsonParamArb(fc.constantFrom(...Object.keys({ ...SYSTEM_ATTRS, ...RESOURCE_ATTRS[name] })).map((k) => ({ [k]: 'desc' })))),
          relations,
        );
  } else if (url === '/api/tables/:table/changes') {
    // Never a valid wait: a long poll holds its request for up to 30 seconds.
    own = some(
      param('after', fc.constantFrom('0', '1', '999999999999999', '9007199254740992', '-1', 'x', '1.5')),
      param('limit', fc.constantFrom('1', '1000', '1001', '0')),
      param('wait', fc.constantFrom('0', '31', '-1', 'x', '1.5', '')),
    );
  } else if (url === '/api/tables/:table/rows-import') {
    own = some(
      param('format', fc.constantFrom('csv', 'tsv', 'jsonl', 'csv', 'tsv', 'jsonl', 'json', ''), 8),
      param('encoding', fc.constantFrom('utf8', 'utf8Bom', 'shiftJis', 'utf8', 'utf8Bom', 'shiftJis', 'utf16'), 8),
      param('mode', fc.constantFrom('create', 'upsert', 'replace')),
      param('atomic', fc.constantFrom('true', 'false', 'yes')),
    );
  }
  const junk = fc.array(
    fc.oneof(
      fc.tuple(hostileKeyArb, fc.oneof(fc.constantFrom(...HOSTILE_STRINGS), bigStringArb)),
      fc.constantFrom<[string, string]>(['filter', '{}'], ['pageSize', '1'], ['relations', '[]'], ['cursor', 'x.y'], ['x', '1'], ['paging', '{"limit":1}']),
    ),
    { maxLength: 2 },
  );
  return fc.oneof({ weight: 6, arbitrary: own }, { weight: 2, arbitrary: fc.tuple(own, junk).map(([a, b]) => [...a, ...b]) }, { weight: 2, arbitrary: fc.constant<Query>([]) });
}

/** Past 16 KiB a URL is refused before routing (HTTP's header limit): much longer values add nothing but time. */
const MAX_QUERY_VALUE = 64 * 1024;

function queryText(query: Query, rawTail: string): string {
  const parts = query.map(([k, v]) => `${enc(k.slice(0, MAX_QUERY_VALUE))}=${enc(v.slice(0, MAX_QUERY_VALUE))}`);
  if (rawTail) parts.push(rawTail);
  return parts.length > 0 ? `?${parts.join('&')}` : '';
}

/** A CSV, TSV or JSONL file of the table's rows, as rows-import reads them. */
function importBodyArb(fx: Fixture): fc.Arbitrary<string | Buffer> {
  const fields = fx.all.fields.filter((f) => f.type !== 'file');
  const row = fc.tuple(rowIdArb, valuesArb(fields, fx, true));
  const csv = fc.tuple(fc.array(row, { minLength: 0, maxLength: 4 }), fc.constantFrom(',', '\t')).map(([rows, sep]) => {
    const cell = (v: unknown) => {
      const s = v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
      return /[",\t\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
    };
    const header = ['id', ...fields.map((f) => f.code)].join(sep);
    return [header, ...rows.map(([id, values]) => [id, ...fields.map((f) => cell(values[f.code]))].map(cell).join(sep))].join('\n');
  });
  const jsonl = fc.array(row, { maxLength: 4 }).map((rows) => rows.map(([id, values]) => JSON.stringify({ id, values })).join('\n'));
  return fc.oneof(
    { weight: 3, arbitrary: fc.oneof(csv, jsonl) },
    { weight: 4, arbitrary: fc.tuple(fc.oneof(csv, jsonl), fc.array(textMutationArb, { minLength: 1, maxLength: 3 })).map(([text, ms]) => ms.reduce<string | Buffer>((t, m) => mutateText(asText(t), m), text)) },
    { weight: 1, arbitrary: fc.constantFrom('', '\ufeff', 'id\n', '"', 'id,id\n1,2', `id,meta\nx,${deepObject(5000).text}`, `{"values":${deepArray(3000).text}}`) },
    { weight: 1, arbitrary: bigStringArb },
  );
}

/** A body: valid-shaped and mutated, arbitrary JSON, or hostile text and bytes. */
function bodyArb(method: string, url: string, fx: Fixture): fc.Arbitrary<{ payload?: string | Buffer; json: boolean }> {
  if (url === '/api/tables/:table/rows-import') return importBodyArb(fx).map((payload) => ({ payload, json: false }));
  if (url === '/files/:tableId/:rowId/:fileId') {
    return fc.oneof(fc.constantFrom('bytes', '', '\u0000\u0001'), bigStringArb).map((payload) => ({ payload, json: false }));
  }
  const shaped = shapedBodyArb(method, url, fx);
  const hostileText = fc.oneof(
    fc.constantFrom('', ' ', 'null', '[]', '{}', '{', '{"a":1}}', "{'a':1}", '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}', '\ufeff{}', '1e999', '"\\ud800"', 'NaN', '{"a":1,"a":2}'),
    fc.constantFrom(deepArray(100_000).text, deepObject(30_000).text, '{"values":' + deepObject(2000).text + '}'),
    bigStringArb.map((s) => JSON.stringify({ values: { title: s } })),
    fc.constantFrom(300_000).map((n) => `[${'1,'.repeat(n)}1]`),
  );
  const options: fc.WeightedArbitrary<{ payload?: string | Buffer; json: boolean }>[] = [
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => ({ payload: JSON.stringify(v), json: true })) },
    { weight: 2, arbitrary: hostileText.map((payload) => ({ payload, json: true })) },
    { weight: 1, arbitrary: fc.constant({ payload: undefined, json: false }) },
  ];
  if (shaped) {
    options.push(
      { weight: 1, arbitrary: shaped.map((v) => ({ payload: jsonText(v), json: true })) },
      { weight: 10, arbitrary: fc.tuple(shaped, fc.array(mutationArb, { minLength: 1, maxLength: 3 })).map(([v, ms]) => ({ payload: jsonText(mutate(v, ms)), json: true })) },
      { weight: 2, arbitrary: fc.tuple(shaped, textMutationArb).map(([v, m]) => ({ payload: mutateText(jsonText(v), m), json: true })) },
    );
  }
  return fc.oneof(...options);
}

const CONTENT_TYPES = [
  'application/json; charset=utf-8', 'application/json; charset=latin1', 'APPLICATION/JSON', 'application/json;', 'application/jsonx', 'application/vnd.api+json',
  'text/plain', 'text/csv', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/octet-stream', '', ';', '*/*',
  'application/json; charset=utf-16', 'x'.repeat(2000), 'application/json, text/plain',
];
const LATIN1 = (s: string) => /^[\t\x20-\x7e\x80-\xff]*$/.test(s);

function keyArb(fx: Fixture): fc.Arbitrary<string | null> {
  return fc.oneof(
    { weight: 80, arbitrary: fc.constant(TEST_KEY) },
    { weight: 4, arbitrary: fc.constant(fx.keys.fixture) },
    { weight: 3, arbitrary: fc.constant(null) },
    { weight: 2, arbitrary: fc.constantFrom(fx.keys.revoked, fx.keys.expired) },
    {
      weight: 3,
      arbitrary: fc.constantFrom('', ' ', TEST_KEY.toUpperCase(), TEST_KEY.slice(0, -1), `${TEST_KEY}x`, `${TEST_KEY}, ${TEST_KEY}`, 'x'.repeat(10_000), ...HOSTILE_STRINGS.filter(LATIN1)),
    },
  );
}

function requestArb(route: RegisteredRoute, fx: Fixture): fc.Arbitrary<FuzzRequest> {
  const { url } = route;
  const signed = url === '/files/:tableId/:rowId/:fileId';
  const path: fc.Arbitrary<string> = signed
    ? fc.oneof(
        pathArb(url, fx, route.method).map((p) => `${p}${route.method === 'PUT' ? fx.uploadUrl.slice(fx.uploadUrl.indexOf('?')) : fx.downloadUrl.slice(fx.downloadUrl.indexOf('?'))}`),
        // The real URL, as given or with one part changed.
        fc.tuple(fc.constantFrom(fx.uploadUrl, fx.downloadUrl), fc.constantFrom('keep', 'signature', 'expires', 'drop', 'twice', 'path', 'upper'), fc.nat()).map(([u, change, n]) => {
          if (change === 'signature') return u.replace(/signature=([^&]*)/, (_, s: string) => `signature=${s.slice(0, n % s.length)}${s[n % s.length] === 'A' ? 'B' : 'A'}${s.slice((n % s.length) + 1)}`);
          if (change === 'expires') return u.replace(/expires=(\d+)/, (_, e: string) => `expires=${Number(e) + 1 + (n % 1000)}`);
          if (change === 'drop') return u.replace(/&?signature=[^&]*/, '');
          if (change === 'twice') return `${u}&${u.slice(u.indexOf('?') + 1)}`;
          if (change === 'path') return u.replace(/\/files\/([^/]+)/, `/files/${fx.plain.id}`);
          if (change === 'upper') return u.replace(/signature=([^&]*)/, (_, s: string) => `signature=${s.toUpperCase()}`);
          return u;
        }),
      )
    : fc.tuple(pathArb(url, fx, route.method), queryArb(route.method, url, fx), fc.constantFrom('', '', '', '', '', '', '', '&', '=', 'a=%ZZ', 'a[b]=1', '%26=1', 'filter', 'filter=%7B&filter=%7B',
      // Bytes that are no UTF-8 (a lone continuation byte, an overlong form, a surrogate, 0xFF), in parameters a route reads.
      'filter=%FF', 'sort=%C0%AF', 'pageSize=%ED%A0%80', 'cursor=%80', 'after=%FF%FE', 'format=c%C0%AFv', 'filter=%7B%22%FF%22%3A1%7D', '%FF=1')).map(([p, q, tail]) => p + queryText(q, tail));
  const method = fc.oneof({ weight: 17, arbitrary: fc.constant(route.method) }, { weight: 3, arbitrary: fc.constantFrom(...METHODS) });
  return fc
    .record({
      path,
      method,
      body: bodyArb(route.method, url, fx),
      key: keyArb(fx),
      contentType: fc.option(fc.constantFrom(...CONTENT_TYPES), { freq: 5 }),
      requestId: fc.option(fc.constantFrom('x'.repeat(2000), "'; DROP TABLE x", '', ' ', 'ÿ', 'a\tb'), { freq: 20 }),
      accept: fc.option(fc.constantFrom('text/csv', 'application/xml', '*/*', 'x'), { freq: 20 }),
    })
    .map(({ path: p, method: m, body, key, contentType, requestId, accept }) => {
      const headers: Record<string, string> = {};
      if (key !== null) headers['x-api-key'] = key;
      if (body.payload !== undefined) {
        const type = contentType ?? (body.json ? 'application/json' : signed ? 'application/pdf' : 'text/csv');
        if (type !== '') headers['content-type'] = type;
      } else if (contentType) headers['content-type'] = contentType;
      if (requestId !== null) headers['x-request-id'] = requestId;
      if (accept !== null) headers.accept = accept;
      // GET and HEAD mostly without a body, as clients send them.
      const payload = (m === 'GET' || m === 'HEAD') && body.payload !== undefined && p.length % 4 !== 0 ? undefined : body.payload;
      return { route: `${route.method} ${url}`, method: m, url: escapeUrl(p), headers, payload };
    });
}

/**
 * How often a route is drawn: the ones that read the most input (rows, their lists, export, import,
 * bulk and batch) more than those that read little (health, the reference page's files).
 */
function routeWeight(route: RegisteredRoute): number {
  if (!route.url.startsWith('/api/') && !route.url.startsWith('/files/')) return 1;
  if (route.url.startsWith('/api/tables/:table/') || route.url === '/api/rows-batch') return route.method === 'HEAD' ? 2 : 6;
  return route.method === 'HEAD' ? 1 : 3;
}

// ---------------------------------------------------------------------------------------------
// Checking answers.

/** What is wrong with an answer, or null. */
function problemOf(req: FuzzRequest, status: number, headers: Record<string, unknown>, text: string): string | null {
  if (status >= 500) return `answered ${status}`;
  if (typeof headers['x-request-id'] !== 'string') return `a ${status} without x-request-id`;
  if (status < 400) return null;
  if (!/^application\/json/.test(String(headers['content-type']))) return `a ${status} of content-type ${String(headers['content-type'])}`;
  if (req.method === 'HEAD') return null;
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    return `a ${status} whose body is not JSON`;
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return `a ${status} whose body is not an object`;
  const extra = Object.keys(body).filter((k) => !['statusCode', 'error', 'message', 'details', 'index'].includes(k));
  if (extra.length > 0) return `a ${status} with keys ${extra.join(', ')}`;
  if (body.statusCode !== status) return `a ${status} whose statusCode is ${body.statusCode}`;
  if (body.error !== STATUS_CODES[status]) return `a ${status} whose error is ${body.error}`;
  if (typeof body.message !== 'string' || body.message === '') return `a ${status} without a message`;
  if (body.details !== undefined) {
    const good = Array.isArray(body.details) && body.details.length > 0 && body.details.every((d: any) => d && typeof d.path === 'string' && typeof d.message === 'string' && Object.keys(d).length === 2);
    if (!good) return `a ${status} with malformed details`;
  }
  if (body.index !== undefined && !(req.route === 'POST /api/rows-batch' && Number.isInteger(body.index))) return `a ${status} with an index outside a batch`;
  return null;
}

const excerpt = (v: string | Buffer | undefined, n = 300) => {
  if (v === undefined) return '(none)';
  const s = typeof v === 'string' ? v : `bytes ${v.subarray(0, n).toString('hex')}`;
  return s.length > n ? `${JSON.stringify(s.slice(0, n))}… (${s.length} characters)` : JSON.stringify(s);
};
const describeRequest = (r: FuzzRequest) =>
  `${r.method} ${excerpt(r.url, 200)} [route ${r.route}] headers ${excerpt(JSON.stringify(r.headers), 200)} body ${excerpt(r.payload)}`;

// ---------------------------------------------------------------------------------------------

eachDatabase('hostile input at scale', (kind) => {
  let t: TestApp;
  let fx: Fixture;
  let routes: RegisteredRoute[];

  before(async () => {
    t = await startApp(kind, { ROWHOUSE_MAX_BODY_BYTES: String(MAX_BODY), ROWHOUSE_MAX_FILE_BYTES: String(MAX_FILE) });
    routes = registeredRoutes(t.app);
    // An event stream never ends by itself, and inject waits for the end: streams that pass every
    // check then answer 200 and end at once (their checks and errors are what is fuzzed here).
    t.app.changeStreams?.close();
    fx = await build(t);
  });
  after(() => t.close());

  it(`${RUNS} requests over every route: no 5xx, every error in the one format, refused requests change no data`, { timeout: 60 * 60_000 }, async (context) => {
    const started = Date.now();
    const failures = new Map<string, { count: number; examples: string[] }>();
    const fail = (key: string, example: string) => {
      const f = failures.get(key) ?? { count: 0, examples: [] };
      f.count++;
      if (f.examples.length < 2) f.examples.push(example);
      failures.set(key, f);
    };
    const statuses = new Map<number, number>();
    /** Per route: whether some request with a valid key got past authentication and routing. */
    const reached = new Set<string>();
    let batches = 0;
    let checked = 0;
    let rebuilds = 0;
    let repairs = 0;
    let sent = 0;
    const timing = { generate: 0, inject: 0, checksum: 0, repair: 0 };

    let arbitrary = fc.oneof(...routes.map((r) => ({ weight: routeWeight(r), arbitrary: requestArb(r, fx) })));
    let baseline = await dataChecksum(t);
    for (let b = 0; sent < RUNS; b++) {
      let t0 = performance.now();
      // A seed per batch, mixed so that the batches of two nearby seeds do not overlap.
      const requests = fc.sample(arbitrary, { seed: Math.imul(SEED, 0x9e3779b1) ^ b, numRuns: Math.min(BATCH, RUNS - sent) });
      timing.generate += performance.now() - t0;
      t0 = performance.now();
      sent += requests.length;
      batches++;
      let wrote = false;
      let next = 0;
      const worker = async () => {
        while (next < requests.length) {
          const req = requests[next++];
          let res;
          try {
            res = await t.app.inject({ method: req.method as 'GET', url: req.url, headers: req.headers, payload: req.payload });
          } catch (err) {
            fail(`${req.route}: inject threw ${(err as Error).message.slice(0, 100)}`, describeRequest(req));
            continue;
          }
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
          if (res.statusCode < 300 && WRITES.has(req.method)) wrote = true;
          if (req.method === req.route.split(' ')[0] && res.statusCode !== 401 && !(res.statusCode === 404 && res.body.startsWith('{"statusCode":404,"error":"Not Found","message":"Route '))) reached.add(req.route);
          const problem = problemOf(req, res.statusCode, res.headers, res.body);
          if (problem === null) continue;
          let message = '';
          try {
            message = String(JSON.parse(res.body).message).replace(/request id .*/s, 'request id …').replace(/[0-9a-f-]{36}/g, '<id>').slice(0, 120);
          } catch {
            message = res.body.slice(0, 120);
          }
          fail(`${req.route}: ${problem} (${message})`, `${describeRequest(req)}\n      → ${res.statusCode} ${excerpt(res.body)}`);
        }
      };
      await Promise.all(Array.from({ length: PARALLEL }, worker));
      timing.inject += performance.now() - t0;
      t0 = performance.now();
      const now = await dataChecksum(t);
      timing.checksum += performance.now() - t0;
      t0 = performance.now();
      if (!wrote) {
        checked++;
        if (now !== baseline) {
          const writes = requests.filter((r) => WRITES.has(r.method)).map(describeRequest);
          fail('data changed in a batch whose every write was refused', writes.join('\n      '));
        }
        baseline = now;
      } else {
        // Writes that succeeded may have deleted or changed what the fuzzer relies on.
        const health = await inspect(t, fx);
        if (health.remake) {
          fx = await build(t);
          rebuilds++;
        } else {
          if (!health.rows) await makeRows(t, fx);
          if (!health.file) await attachFile(t, fx);
          if (!health.items) {
            await clear(t, RESOURCES);
            await makeItems(t, fx);
          }
          if (!health.rows || !health.file || !health.items) {
            await tidy(t);
            repairs++;
          }
        }
        const changed = health.remake || !health.rows || !health.file || !health.items;
        if (health.remake || !health.file || !health.items) arbitrary = fc.oneof(...routes.map((r) => ({ weight: routeWeight(r), arbitrary: requestArb(r, fx) })));
        baseline = changed ? await dataChecksum(t) : now;
        timing.repair += performance.now() - t0;
      }
    }

    const seconds = (Date.now() - started) / 1000;
    const histogram = [...statuses].sort(([a], [b]) => a - b).map(([s, n]) => `${s}: ${n}`).join(', ');
    const summary = [
      `[${kind}] ${sent} requests in ${seconds.toFixed(1)} s (${(sent / seconds).toFixed(0)}/s), seed ${SEED}; statuses ${histogram}`,
      `[${kind}] ${batches} batches, ${checked} with every write refused (data compared), ${rebuilds} fixture rebuilds, ${repairs} repairs`,
      `[${kind}] seconds spent generating ${(timing.generate / 1000).toFixed(1)}, requesting ${(timing.inject / 1000).toFixed(1)}, comparing data ${(timing.checksum / 1000).toFixed(1)}, repairing the fixture ${(timing.repair / 1000).toFixed(1)}`,
    ];
    for (const line of summary) context.diagnostic(line);

    const report = [...failures].map(([key, f]) => `${key} ×${f.count}\n      ${f.examples.join('\n      ')}`);
    assert.deepEqual(report, [], `${report.length} kinds of failure (seed ${SEED}):\n${report.slice(0, 25).join('\n')}`);
    // The run meant something: most batches were compared, every route was reached with a valid
    // key, and the answers span what hostile input should get.
    assert.ok(checked >= batches / 4, `only ${checked} of ${batches} batches had every write refused`);
    if (RUNS >= 5000) {
      const unreached = routes.map((r) => `${r.method} ${r.url}`).filter((r) => !reached.has(r));
      assert.deepEqual(unreached, [], 'routes no request reached');
      for (const status of [200, 201, 400, 401, 403, 404, 409, 413, 414, 415]) assert.ok(statuses.has(status), `no ${status} among the answers`);
    }
  });

  it('bounds what one request can ask for: filter depth and size, sort length, items, path segments and body size (400, 413, 414)', async () => {
    const rows = `/api/tables/${fx.all.id}/rows`;
    const nested = (levels: number) => {
      let f: Record<string, unknown> = { values: { amount: { _eq: 1 } } };
      for (let i = 0; i < levels; i++) f = { _not: f };
      return f;
    };
    assert.equal((await t.get(rows, { query: { filter: nested(16) } })).status, 200);
    assert.match(String(expectError(await t.get(rows, { query: { filter: nested(17) } }), 400).message), /more than 16 levels deep/);
    // Size counts every part: empty filters and operators too. Past it, one problem, not one per part.
    const wide = (n: number, item: unknown) => ({ _or: Array.from({ length: n }, () => item) });
    assert.equal((await t.get(rows, { query: { filter: wide(100, { values: { amount: { _eq: 1 } } }) } })).status, 200);
    for (const item of [{}, { values: { amount: { _eq: 1 } } }, { id: { _gte: 'a', _lte: 'z' } }]) {
      const body = expectError(await t.get(rows, { query: { filter: wide(5000, item) } }), 400);
      assert.match(String(body.message), /more than 500/);
      assert.equal((body.details as unknown[]).length, 1);
    }
    const keys = ['id', 'createdAt', 'updatedAt', 'createdBy', 'updatedBy', 'title', 'note', 'amount', 'flag'].map((k) => ({ [k]: { direction: 'asc', nulls: 'nullsLast' } }));
    assert.equal((await t.get(rows, { query: { sort: keys.slice(0, 8) } })).status, 200);
    assert.match(String(expectError(await t.get(rows, { query: { sort: keys } }), 400).message), /more than 8/);

    // The generic resources' filters: the same depth, and a size of their own (with the values of in and notIn).
    let deep: Record<string, unknown> = { name: { eq: 'x' } };
    for (let i = 0; i < 17; i++) deep = { and: [deep] };
    assert.match(String(expectError(await t.get('/api/flows', { query: { filter: deep } }), 400).message), /more than 16 levels deep/);
    assert.match(String(expectError(await t.get('/api/flows', { query: { filter: { or: Array(5000).fill({ name: { eq: 'x' } }) } } }), 400).message), /more than 500/);
    const lists = { or: Array(11).fill({ name: { in: Array(1000).fill('x') } }) };
    assert.match(String(expectError(await t.get('/api/flows', { query: { filter: lists } }), 400).message), /more than 10000 values/);
    assert.equal((await t.get('/api/flows', { query: { filter: { or: Array(10).fill({ name: { in: Array(1000).fill('x') } }) } } })).status, 200);

    // Items per request.
    const many = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `b${i}`, values: { title: 't' } }));
    expectError(await t.post(`${rows}-bulk`, { data: many(1001) }), 400);
    expectError(await t.post('/api/rows-batch', { operations: many(1001).map((r) => ({ type: 'create', tableId: fx.all.id, ...r })) }), 400);
    expectError(await t.post('/api/members/create-many', Array(1001).fill({ name: 'm' })), 400);

    // A path segment past 1024 characters, a body past ROWHOUSE_MAX_BODY_BYTES, a file past ROWHOUSE_MAX_FILE_BYTES.
    expectError(await t.get(`${rows}/${'x'.repeat(1025)}`), 414);
    expectError(await t.post(rows, { values: { title: 't', note: 'x'.repeat(MAX_BODY) } }), 413);
    expectError(await t.request('POST', `${rows}-import?format=csv&encoding=utf8`, { raw: `id,note\nbig,${'x'.repeat(MAX_FILE)}\n`, headers: { 'content-type': 'text/csv' } }), 413);
    const upload = new URL((await ok(t.post(`${rows}/big/file-upload-url`, { count: 1 }))).data[0].url);
    expectError(await t.request('PUT', upload.pathname + upload.search, { raw: 'x'.repeat(MAX_FILE + 1), headers: { 'content-type': 'text/plain' }, key: null }), 413);
  });
});
