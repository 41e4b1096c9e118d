import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import fc from 'fast-check';
import type { FieldDef } from '../../src/domain/field-types/field-type.ts';
import { fieldType } from '../../src/domain/field-types/registry.ts';
import { physicalColumn, physicalTable } from '../../src/store/user-tables.ts';
import { type Reply, type TestApp, eachDatabase, startApp } from '../support/harness.ts';
import {
  type RefFields,
  type RefFilter,
  type RefRow,
  type RefSort,
  type RefType,
  matchesFilter,
  referenceRows,
  rowComparator,
} from '../support/reference-rows.ts';

/**
 * Keyset walks (CONTRACT §6) against an in-memory reference: random tables, rows, filters and
 * sorts; following nextUrl must return exactly the reference's rows in its order, on both
 * databases, and rows that exist throughout a walk come back exactly once while others are
 * inserted and deleted between pages. Set ROWHOUSE_FC_SEED to explore other cases.
 */

const SEED = process.env.ROWHOUSE_FC_SEED ? Number(process.env.ROWHOUSE_FC_SEED) : 20_240_501;
const RUNS_A = Number(process.env.ROWHOUSE_FC_RUNS ?? 40);
const RUNS_B = Number(process.env.ROWHOUSE_FC_RUNS ?? 30);
const ORIGIN = 'http://rowhouse.test';

// ---------------------------------------------------------------------------------------------
// Values: few distinct ones (so sort keys tie), unicode, and the LIKE metacharacters % _ \.

/** U+FF01 and U+FFE5 sort before emoji in UTF-16 but after them in code point order. */
const ATOMS = ['a', 'b', 'A', 'Z', 'é', 'e\u0301', '日', '本', '語', '😀', '🎉', '%', '_', '\\', ' ', '\uff01', '\uffe5', '0'];
const TEXTS = ['', 'a', 'ab', 'A', 'B', '日本', '😀', '\uff01', '%', '_', '\\', 'a%b', 'a_b', 'a\\b', 'é', 'e\u0301'];
const textArb = fc.oneof(fc.constantFrom(...TEXTS), fc.array(fc.constantFrom(...ATOMS), { maxLength: 4 }).map((a) => a.join('')));
const patternArb = fc.oneof(fc.constantFrom(...ATOMS, '', 'a%', '_b', '\\%'), fc.array(fc.constantFrom(...ATOMS), { maxLength: 2 }).map((a) => a.join('')));

const numberArb = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(-1.5, -1, 0, 0.1, 0.5, 1, 2, 1e15, -1e-7, 3) },
  { weight: 2, arbitrary: fc.integer({ min: -3, max: 3 }) },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
);

const DATE_TIMES = [
  '2024-01-01T00:00:00Z',
  '2024-01-01T09:00:00+09:00', // the same instant as the one above
  '2024-01-01T00:00:00.001Z',
  '1999-12-31T23:59:59.999Z',
  '2024-06-30T12:00:00-05:30',
  '0001-01-01T00:00:00Z',
  '9999-12-31T23:59:59.999Z',
];
const DATES = ['2024-01-01', '2024-02-29', '1999-12-31', '0001-01-01', '9999-12-31', '2024-01-10'];
const TIMES = ['00:00:00', '09:30:00', '09:30:01', '12:00:00', '23:59:59'];
const YEAR_MONTHS = ['2024-01', '2023-12', '2024-10', '0001-01', '9999-12'];
const CHOICES = ['a', 'B', '日本', '😀', '\uff01', '%_\\', 'é'];
/** List elements: scalars that look alike across JSON types ('1' and 1, 'true' and true), nulls and nested values. */
const LIST_SCALARS = ['a', '1', 'true', '😀', '%', '', 0, 1, -1.5, true, false];
const listScalarArb = fc.constantFrom(...LIST_SCALARS);
const listElementArb = fc.oneof(
  { weight: 4, arbitrary: listScalarArb },
  { weight: 1, arbitrary: fc.constantFrom(null, [1], ['a'], [true], { a: 'a' }) },
);

/** System columns: a pool of instants (one far in the future, after rows inserted now) and members. */
const INSTANTS = ['2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.001Z', '2023-06-01T12:00:00.000Z', '2999-01-01T00:00:00.000Z'];
const MEMBERS = ['a', 'B', '日本', '😀', '\uff01'];

interface FieldSpec {
  code: string;
  type: RefType;
  options?: Record<string, unknown>;
}

const FIELDS: FieldSpec[] = [
  { code: 't', type: 'text' },
  { code: 'n', type: 'number' },
  { code: 'b', type: 'boolean' },
  { code: 'dt', type: 'dateTime' },
  { code: 'd', type: 'date' },
  { code: 'tm', type: 'time' },
  { code: 'ym', type: 'yearMonth' },
  { code: 's', type: 'select', options: { choices: CHOICES } },
  { code: 'l', type: 'list' },
];
const REF_FIELDS: RefFields = Object.fromEntries(FIELDS.map((f) => [f.code, f.type]));
const SYSTEM_TYPES: Record<string, RefType> = { id: 'text', createdAt: 'dateTime', updatedAt: 'dateTime', createdBy: 'text', updatedBy: 'text' };
const SORT_KEYS = [...Object.keys(SYSTEM_TYPES), ...FIELDS.filter((f) => f.type !== 'list').map((f) => f.code)];

/** A written value of each type (what POST /rows would take). */
const VALUE_ARBS: Record<string, fc.Arbitrary<unknown>> = {
  text: textArb,
  number: numberArb,
  boolean: fc.boolean(),
  dateTime: fc.constantFrom(...DATE_TIMES),
  date: fc.constantFrom(...DATES),
  time: fc.constantFrom(...TIMES),
  yearMonth: fc.constantFrom(...YEAR_MONTHS),
  select: fc.constantFrom(...CHOICES),
  list: fc.array(listElementArb, { maxLength: 3 }),
};

type Values = Record<string, unknown>;
const valuesArb: fc.Arbitrary<Values> = fc.record(
  Object.fromEntries(FIELDS.map((f) => [f.code, fc.option(VALUE_ARBS[f.type], { nil: null, freq: 4 })])),
);

interface GenRow {
  id: string;
  createdAt: string;
  updatedAt: string;
  createdBy: string;
  updatedBy: string;
  values: Values;
}

const ID_CHARS = ['a', 'b', 'A', 'Z', '0', '9', '_', '.', ':', '@', '-'];
const idArb = fc
  .tuple(fc.constantFrom('a', 'b', 'A', 'Z', '0', '9'), fc.array(fc.constantFrom(...ID_CHARS), { maxLength: 3 }))
  .map(([h, t]) => h + t.join(''));
const rowArb: fc.Arbitrary<GenRow> = fc.record({
  id: idArb,
  createdAt: fc.constantFrom(...INSTANTS),
  updatedAt: fc.constantFrom(...INSTANTS),
  createdBy: fc.constantFrom(...MEMBERS),
  updatedBy: fc.constantFrom(...MEMBERS),
  values: valuesArb,
});
const rowsArb = (max: number) => fc.uniqueArray(rowArb, { selector: (r) => r.id, maxLength: max, size: 'large' });

// ---------------------------------------------------------------------------------------------
// Filters and sorts in the API's JSON syntax.

const DATE_TIME_FILTERS = [...DATE_TIMES, ...INSTANTS, '2024-01-01T05:00:00+05:00', '2500-01-01T00:00:00Z'];

/** Operators valid for a type, each with the values it may compare with. */
function operatorArbs(type: RefType): fc.Arbitrary<[string, unknown]>[] {
  const op = (name: string, value: fc.Arbitrary<unknown>) => fc.tuple(fc.constant(name), value);
  const order = (value: fc.Arbitrary<unknown>) => ['_eq', '_gt', '_gte', '_lt', '_lte'].map((name) => op(name, value));
  const isNull = op('_isNull', fc.boolean());
  switch (type) {
    case 'text':
    case 'select':
      return [
        ...order(type === 'select' ? fc.oneof(fc.constantFrom(...CHOICES), textArb) : textArb),
        ...['_contains', '_startsWith', '_endsWith'].map((name) => op(name, patternArb)),
        isNull,
      ];
    case 'number':
      return [...order(numberArb), isNull];
    case 'boolean':
      return [op('_eq', fc.boolean()), isNull];
    case 'dateTime':
      return [...order(fc.constantFrom(...DATE_TIME_FILTERS)), isNull];
    case 'date':
      return [...order(fc.constantFrom(...DATES, '2024-01-05')), isNull];
    case 'time':
      return [...order(fc.constantFrom(...TIMES, '09:30:00', '10:00:00')), isNull];
    case 'yearMonth':
      return [...order(fc.constantFrom(...YEAR_MONTHS, '2024-02')), isNull];
    case 'list':
      return [op('_contains', listScalarArb), isNull];
    default:
      throw new Error(`no operators for ${type}`);
  }
}

/**
 * An object of one entry, sometimes two (ANDed): more entries would AND nearly every row away.
 * Later entries with a key already taken are dropped.
 */
function fewOf<T>(entry: fc.Arbitrary<[string, T]>): fc.Arbitrary<Record<string, T>> {
  return fc
    .oneof({ weight: 3, arbitrary: fc.tuple(entry) }, { weight: 1, arbitrary: fc.tuple(entry, entry) })
    .map((entries) => {
      const out: Record<string, T> = {};
      for (const [k, v] of entries) if (!Object.hasOwn(out, k)) out[k] = v;
      return out;
    });
}

/** `{op: value, …}`: one or two operators, ANDed. */
function conditionArb(type: RefType): fc.Arbitrary<Record<string, unknown>> {
  return fewOf(fc.oneof(...operatorArbs(type)));
}

/** `values`: one or two fields. */
const valuesConditionArb = fewOf(fc.oneof(...FIELDS.map((f) => fc.tuple(fc.constant(f.code), conditionArb(f.type)))));
const systemConditionArb = fc.oneof(
  ...Object.entries(SYSTEM_TYPES).map(([key, type]) =>
    fc.tuple(fc.constant(key), conditionArb(type)),
  ),
);

/** Filters nested up to `depth` levels of `_and`, `_or`, `_not`; several keys in one object are ANDed. */
function filterArbs(maxDepth: number): fc.Arbitrary<RefFilter> {
  type Part = [string, unknown];
  const leafParts: fc.Arbitrary<Part>[] = [
    fc.tuple(fc.constant('values'), valuesConditionArb),
    fc.tuple(fc.constant('values'), valuesConditionArb),
    systemConditionArb,
  ];
  const objectOf = (parts: fc.Arbitrary<Part>[]) => fewOf(fc.oneof(...parts)) as fc.Arbitrary<RefFilter>;
  let level: fc.Arbitrary<RefFilter> = objectOf(leafParts);
  for (let d = 1; d <= maxDepth; d++) {
    const sub = level;
    level = objectOf([
      ...leafParts,
      fc.tuple(fc.constant('_and'), fc.array(sub, { minLength: 1, maxLength: 2 })),
      fc.tuple(fc.constant('_or'), fc.array(sub, { minLength: 1, maxLength: 3 })),
      fc.tuple(fc.constant('_not'), sub),
    ]);
  }
  return level;
}

const filterArb: fc.Arbitrary<RefFilter | undefined> = fc.option(filterArbs(3), { nil: undefined, freq: 6 });

const sortArb: fc.Arbitrary<RefSort | undefined> = fc.oneof(
  { weight: 1, arbitrary: fc.constantFrom<RefSort | undefined>(undefined, []) },
  {
    weight: 6,
    arbitrary: fc
      .uniqueArray(
        fc.record({
          key: fc.constantFrom(...SORT_KEYS),
          direction: fc.constantFrom('asc' as const, 'desc' as const),
          nulls: fc.constantFrom('nullsFirst' as const, 'nullsLast' as const),
        }),
        { selector: (k) => k.key, minLength: 1, maxLength: 3 },
      )
      .map((keys) => keys.map(({ key, direction, nulls }) => ({ [key]: { direction, nulls } }))),
  },
);

// ---------------------------------------------------------------------------------------------
// Driving the API.

interface TableInfo {
  id: string;
  fields: FieldDef[];
}

function ok(reply: Reply, status: number, what: string): void {
  if (reply.status !== status) assert.fail(`${what}: expected ${status}, got ${reply.status}: ${reply.text.slice(0, 800)}`);
}

async function createTable(t: TestApp): Promise<TableInfo> {
  const reply = await t.post('/api/tables', {
    name: 'Walk',
    fields: FIELDS.map((f) => ({ code: f.code, type: f.type, ...(f.options ? { options: f.options } : {}) })),
  });
  ok(reply, 201, 'create table');
  return { id: reply.body.id, fields: reply.body.fields };
}

async function dropTable(t: TestApp, table: TableInfo): Promise<void> {
  ok(await t.delete(`/api/tables/${table.id}`), 200, 'delete table');
}

/** The rows as the store would write them (the field types' own codecs), in one statement. */
async function insertRows(t: TestApp, table: TableInfo, rows: GenRow[]): Promise<void> {
  if (rows.length === 0) return;
  const { dialect } = t.database;
  const data = rows.map((r) => {
    const out: Record<string, unknown> = {
      id: r.id,
      created_at: r.createdAt,
      updated_at: r.updatedAt,
      created_by: r.createdBy,
      updated_by: r.updatedBy,
    };
    for (const f of table.fields) {
      const v = r.values[f.code];
      if (v === null) {
        out[physicalColumn(f.id)] = null;
        continue;
      }
      const type = fieldType(f.type);
      const parsed = type.parse(v, f);
      if (!parsed.ok) throw new Error(`generated value ${JSON.stringify(v)} is not a valid ${f.type}: ${parsed.message}`);
      out[physicalColumn(f.id)] = type.toDb(parsed.value, dialect);
    }
    return out;
  });
  await t.database.db.insertInto(physicalTable(table.id)).values(data).execute();
}

/** What the API should answer for a written value. */
function apiValue(type: RefType, v: unknown): unknown {
  if (v === null) return null;
  if (type === 'dateTime') return new Date(v as string).toISOString();
  return JSON.parse(JSON.stringify(v)); // -0 is 0 in JSON
}

/** Every row of the table through GET /rows, checked against what was written. */
async function readBack(t: TestApp, table: TableInfo, written: GenRow[]): Promise<RefRow[]> {
  const reply = await t.get(`/api/tables/${table.id}/rows`, { query: { pageSize: '200', sort: [{ id: { direction: 'asc', nulls: 'nullsLast' } }] } });
  ok(reply, 200, 'read back');
  assert.equal(reply.body.nextUrl, null);
  const records = reply.body.data as RefRow[];
  const byId = new Map(records.map((r) => [r.id, r]));
  assert.equal(records.length, written.length, 'every written row reads back');
  for (const w of written) {
    const r = byId.get(w.id);
    assert.ok(r, `row ${w.id} reads back`);
    assert.deepEqual(
      { createdAt: r.createdAt, updatedAt: r.updatedAt, createdBy: r.createdBy, updatedBy: r.updatedBy, values: r.values },
      {
        createdAt: w.createdAt,
        updatedAt: w.updatedAt,
        createdBy: w.createdBy,
        updatedBy: w.updatedBy,
        values: Object.fromEntries(FIELDS.map((f) => [f.code, apiValue(f.type, w.values[f.code])])),
      },
      `row ${w.id} reads back as written`,
    );
  }
  return records;
}

function listQuery(pageSize: number, filter: RefFilter | undefined, sort: RefSort | undefined): Record<string, unknown> {
  return { pageSize: String(pageSize), filter, sort };
}

/** One page, checked for shape: at most pageSize rows, a full page whenever there is a next one, Link = nextUrl. */
async function page(t: TestApp, url: string, pageSize: number, query?: Record<string, unknown>): Promise<{ rows: RefRow[]; next: string | null }> {
  const reply = await t.get(url, { query });
  ok(reply, 200, `GET ${url}`);
  const rows = reply.body.data as RefRow[];
  const next = reply.body.nextUrl as string | null;
  assert.ok(rows.length <= pageSize, `a page holds at most ${pageSize} rows`);
  if (next !== null) {
    assert.ok(next.startsWith(`${ORIGIN}/api/tables/`), `nextUrl is absolute: ${next}`);
    assert.equal(rows.length, pageSize, 'a page with a next page is full');
    assert.equal(reply.headers.link, `<${next}>; rel="next"`);
    return { rows, next: next.slice(ORIGIN.length) };
  }
  assert.equal(reply.headers.link, undefined, 'no Link on the last page');
  return { rows, next: null };
}

const describeCase = (filter: unknown, sort: unknown, pageSize: number) =>
  `filter=${JSON.stringify(filter)} sort=${JSON.stringify(sort)} pageSize=${pageSize}`;

// ---------------------------------------------------------------------------------------------

eachDatabase('property: keyset walks equal the reference', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(kind);
  });
  after(() => t.close());

  it('A: following nextUrl returns exactly the reference rows in order, no page empty', async () => {
    await fc.assert(
      fc.asyncProperty(rowsArb(25), filterArb, sortArb, fc.integer({ min: 1, max: 7 }), async (rows, filter, sort, pageSize) => {
        const table = await createTable(t);
        try {
          await insertRows(t, table, rows);
          const records = await readBack(t, table, rows);
          const expected = referenceRows(REF_FIELDS, records, filter, sort);
          const got: string[] = [];
          let pages = 0;
          let current = await page(t, `/api/tables/${table.id}/rows`, pageSize, listQuery(pageSize, filter, sort));
          for (;;) {
            pages++;
            if (pages > 1 || expected.length > 0) assert.ok(current.rows.length > 0, `page ${pages} is empty`);
            got.push(...current.rows.map((r) => r.id));
            if (current.next === null) break;
            assert.ok(pages <= rows.length + 1, 'the walk ends');
            current = await page(t, current.next, pageSize);
          }
          assert.deepEqual(got, expected, describeCase(filter, sort, pageSize));
        } finally {
          await dropTable(t, table);
        }
      }),
      { seed: SEED, numRuns: RUNS_A, endOnFailure: process.env.ROWHOUSE_FC_SHRINK === '0' },
    );
  });

  it('B: rows existing throughout a walk come back exactly once while others are inserted and deleted', async () => {
    const stepArb = fc.record({
      inserts: fc.array(valuesArb, { maxLength: 2 }),
      deletes: fc.array(fc.nat(), { maxLength: 2 }),
    });
    const caseArb = fc.record({
      rows: rowsArb(20),
      volatile: fc.array(fc.boolean(), { minLength: 20, maxLength: 20 }),
      filter: filterArb,
      sort: sortArb,
      pageSize: fc.integer({ min: 1, max: 5 }),
      steps: fc.array(stepArb, { minLength: 1, maxLength: 8 }),
    });
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ rows, volatile, filter, sort, pageSize, steps }) => {
        const table = await createTable(t);
        try {
          await insertRows(t, table, rows);
          const records = await readBack(t, table, rows);
          const compare = rowComparator(REF_FIELDS, sort);
          const matches = (r: RefRow) => filter === undefined || matchesFilter(REF_FIELDS, r, filter);
          const isVolatile = new Set(rows.filter((_, i) => volatile[i]).map((r) => r.id));
          const deleted = new Set<string>();
          const inserted: { row: RefRow; visible: boolean }[] = [];
          const got: string[] = [];
          let last: RefRow | undefined;
          let current = await page(t, `/api/tables/${table.id}/rows`, pageSize, listQuery(pageSize, filter, sort));
          for (let step = 0; ; step++) {
            got.push(...current.rows.map((r) => r.id));
            if (current.rows.length > 0) last = current.rows[current.rows.length - 1];
            if (current.next === null) break;
            assert.ok(step <= rows.length + 2 * steps.length + 1, 'the walk ends');
            // Changes between the first pages only, so inserts landing ahead of the cursor cannot keep a walk going forever.
            const ops = steps[step] ?? { inserts: [], deletes: [] };
            const returned = new Set(got);
            for (const k of ops.deletes) {
              const candidates = records.filter((r) => isVolatile.has(r.id) && !deleted.has(r.id) && !returned.has(r.id));
              if (candidates.length === 0) break;
              const victim = candidates[k % candidates.length];
              ok(await t.delete(`/api/tables/${table.id}/rows/${encodeURIComponent(victim.id)}`), 204, `delete ${victim.id}`);
              deleted.add(victim.id);
            }
            for (const values of ops.inserts) {
              const reply = await t.post(`/api/tables/${table.id}/rows`, { values });
              ok(reply, 201, 'insert during the walk');
              const row = reply.body as RefRow;
              // Visible exactly when it matches and sorts after the cursor (the last row returned).
              inserted.push({ row, visible: matches(row) && (last === undefined || compare(row, last) > 0) });
            }
            current = await page(t, current.next, pageSize);
          }

          const context = `${describeCase(filter, sort, pageSize)} deleted=${JSON.stringify([...deleted])}`;
          const seen = new Map<string, number>();
          for (const id of got) seen.set(id, (seen.get(id) ?? 0) + 1);
          const twice = [...seen].filter(([, n]) => n > 1).map(([id]) => id);
          assert.deepEqual(twice, [], `no row appears twice; ${context}`);
          const throughout = records.filter((r) => !deleted.has(r.id) && matches(r)).map((r) => r.id);
          const missing = throughout.filter((id) => !seen.has(id));
          assert.deepEqual(missing, [], `every row existing throughout appears; ${context}`);
          const resurrected = got.filter((id) => deleted.has(id));
          assert.deepEqual(resurrected, [], `rows deleted before they were reached do not appear; ${context}`);
          // Exactly: the reference order over the rows that stayed plus the inserted rows that landed after the cursor.
          const finalRows = [...records.filter((r) => !deleted.has(r.id)), ...inserted.filter((i) => i.visible).map((i) => i.row)];
          assert.deepEqual(got, referenceRows(REF_FIELDS, finalRows, filter, sort), context);
        } finally {
          await dropTable(t, table);
        }
      }),
      { seed: SEED, numRuns: RUNS_B, endOnFailure: process.env.ROWHOUSE_FC_SHRINK === '0' },
    );
  });
});
