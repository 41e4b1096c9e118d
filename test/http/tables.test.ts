import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { physicalColumn } from '../../src/store/user-tables.ts';
import { type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';
import { ISO, type Table, TableKit, UUID, assertPaths, detailPaths } from './tables-support.ts';

/** Table definitions (CONTRACT §4): create, codes, read, list, delete and bad input. PUT is in tables-update.test.ts. */

const ALL_TYPES = [
  { code: 'title', type: 'text', required: true, options: { maxLength: 200 } },
  { code: 'price', name: 'Price', type: 'number', options: { min: 0, max: 1000 } },
  { code: 'paid', type: 'boolean' },
  { code: 'orderedAt', type: 'dateTime' },
  { code: 'due', type: 'date' },
  { code: 'at', type: 'time' },
  { code: 'month', type: 'yearMonth' },
  { code: 'color', type: 'select', required: true, options: { choices: ['red', 'green'] } },
  { code: 'meta', type: 'record' },
  { code: 'tags', type: 'list' },
  { code: 'attachment', type: 'file', required: false, options: {} },
];

eachDatabase('tables: create, read, list, delete', (kind) => {
  let t: TestApp;
  let k: TableKit;
  before(async () => {
    t = await startApp(kind);
    k = new TableKit(t);
  });
  after(() => t.close());

  describe('create', () => {
    it('creates a table with all eleven field types in the shape of CONTRACT §4', async () => {
      const r = await t.post('/api/tables', { code: 'all_types', name: 'All types', description: 'every type', fields: ALL_TYPES });
      assert.equal(r.status, 201, r.text);
      const table = r.body as Table;
      assert.deepEqual(Object.keys(table).sort(), [
        'code', 'createdAt', 'createdBy', 'description', 'fields', 'id', 'name', 'updatedAt', 'updatedBy',
      ]);
      assert.match(table.id, UUID);
      assert.equal(table.code, 'all_types');
      assert.equal(table.name, 'All types');
      assert.equal(table.description, 'every type');
      assert.match(table.createdAt, ISO);
      assert.equal(table.updatedAt, table.createdAt);
      assert.equal(table.createdBy, t.ownerId);
      assert.equal(table.updatedBy, t.ownerId);
      assert.deepEqual(
        table.fields.map(({ id: _id, ...rest }) => rest),
        [
          { code: 'title', name: 'title', type: 'text', required: true, options: { maxLength: 200 } },
          { code: 'price', name: 'Price', type: 'number', required: false, options: { min: 0, max: 1000 } },
          { code: 'paid', name: 'paid', type: 'boolean', required: false, options: {} },
          { code: 'orderedAt', name: 'orderedAt', type: 'dateTime', required: false, options: {} },
          { code: 'due', name: 'due', type: 'date', required: false, options: {} },
          { code: 'at', name: 'at', type: 'time', required: false, options: {} },
          { code: 'month', name: 'month', type: 'yearMonth', required: false, options: {} },
          { code: 'color', name: 'color', type: 'select', required: true, options: { choices: ['red', 'green'] } },
          { code: 'meta', name: 'meta', type: 'record', required: false, options: {} },
          { code: 'tags', name: 'tags', type: 'list', required: false, options: {} },
          { code: 'attachment', name: 'attachment', type: 'file', required: false, options: {} },
        ],
      );
      for (const f of table.fields) {
        assert.deepEqual(Object.keys(f).sort(), ['code', 'id', 'name', 'options', 'required', 'type']);
        assert.match(f.id, UUID);
      }
      assert.equal(new Set(table.fields.map((f) => f.id)).size, 11);
      // What GET answers is what POST answered.
      assert.deepEqual(await k.get(table.id), table);
    });

    it('creates the SQL table with one typed column per field, NOT NULL for required ones', async () => {
      const table = await k.create({ code: 'all_sql', name: 'All SQL', fields: ALL_TYPES.map((f) => ({ ...f, required: true })) });
      assert.deepEqual(await k.columnNames(table.id), k.expectedColumns(table.fields));
      const notNull = await k.columns(table.id);
      for (const f of table.fields) assert.equal(notNull[physicalColumn(f.id)], true, `${f.code} is NOT NULL`);

      const types = await k.columnTypes(table.id);
      const expected: Record<string, string> =
        kind === 'postgres'
          ? {
              text: 'text', number: 'double precision', boolean: 'boolean', dateTime: 'timestamp with time zone', date: 'date',
              time: 'time without time zone', yearMonth: 'text', select: 'text', record: 'jsonb', list: 'jsonb', file: 'jsonb',
            }
          : {
              text: 'text', number: 'real', boolean: 'integer', dateTime: 'text', date: 'text', time: 'text', yearMonth: 'text',
              select: 'text', record: 'text', list: 'text', file: 'text',
            };
      for (const f of table.fields) assert.equal(types[physicalColumn(f.id)], expected[f.type], `column type of ${f.type}`);

      const full = Object.fromEntries(table.fields.map((f) => [f.id, k.sample(f.type)]));
      await k.insert(table.id, full);
      for (const f of table.fields) {
        await assert.rejects(k.insert(table.id, { ...full, [f.id]: null }), Error, `null in required ${f.code} must fail`);
      }
      assert.equal((await k.rows(table.id)).length, 1);
    });

    it('leaves optional columns nullable', async () => {
      const table = await k.create({ code: 'all_optional', name: 'Optional', fields: ALL_TYPES.map((f) => ({ ...f, required: false })) });
      const notNull = await k.columns(table.id);
      for (const f of table.fields) assert.equal(notNull[physicalColumn(f.id)], false, `${f.code} is nullable`);
      await k.insert(table.id, Object.fromEntries(table.fields.map((f) => [f.id, null])));
      const [row] = await k.rows(table.id);
      for (const f of table.fields) assert.equal(row[physicalColumn(f.id)], null);
    });

    it('creates a table without fields, and without a code', async () => {
      const r = await t.post('/api/tables', { name: 'Bare' });
      assert.equal(r.status, 201, r.text);
      assert.equal(r.body.code, null);
      assert.equal(r.body.description, null);
      assert.deepEqual(r.body.fields, []);
      assert.ok(await k.tableExists(r.body.id));
      assert.deepEqual(await k.columnNames(r.body.id), k.expectedColumns([]));
      assert.deepEqual(await k.get(r.body.id), r.body);
      const empty = await k.create({ name: 'Empty list', fields: [] });
      assert.deepEqual(empty.fields, []);
    });

    it('accepts valid options: text maxLength, number min/max with min <= max, select choices', async () => {
      const table = await k.create({
        name: 'Options ok',
        fields: [
          { code: 'a', type: 'text', options: { maxLength: 1 } },
          { code: 'b', type: 'text', options: { maxLength: 1_000_000 } },
          { code: 'c', type: 'number', options: { min: 5, max: 5 } },
          { code: 'd', type: 'number', options: { min: -10.5 } },
          { code: 'e', type: 'number', options: { max: -1 } },
          { code: 'f', type: 'select', options: { choices: ['only'] } },
          { code: 'g', type: 'text' },
        ],
      });
      assert.deepEqual(
        table.fields.map((f) => f.options),
        [{ maxLength: 1 }, { maxLength: 1_000_000 }, { min: 5, max: 5 }, { min: -10.5 }, { max: -1 }, { choices: ['only'] }, {}],
      );
    });

    it('refuses bad options, each named in details, and creates nothing', async () => {
      const before = await k.count();
      const cases: [Record<string, unknown>, string][] = [
        [{ code: 'x', type: 'text', options: { maxLength: 0 } }, 'fields[0].options.maxLength'],
        [{ code: 'x', type: 'text', options: { maxLength: 1.5 } }, 'fields[0].options.maxLength'],
        [{ code: 'x', type: 'text', options: { maxLength: '10' } }, 'fields[0].options.maxLength'],
        [{ code: 'x', type: 'text', options: { maxLength: 1_000_001 } }, 'fields[0].options.maxLength'],
        [{ code: 'x', type: 'number', options: { min: 2, max: 1 } }, 'fields[0].options'],
        [{ code: 'x', type: 'number', options: { min: '1' } }, 'fields[0].options.min'],
        [{ code: 'x', type: 'number', options: { max: null } }, 'fields[0].options.max'],
        [{ code: 'x', type: 'select' }, 'fields[0].options.choices'],
        [{ code: 'x', type: 'select', options: {} }, 'fields[0].options.choices'],
        [{ code: 'x', type: 'select', options: { choices: [] } }, 'fields[0].options.choices'],
        [{ code: 'x', type: 'select', options: { choices: ['a', 'b', 'a'] } }, 'fields[0].options.choices'],
        [{ code: 'x', type: 'select', options: { choices: 'a' } }, 'fields[0].options.choices'],
        [{ code: 'x', type: 'select', options: { choices: [1, 2] } }, 'fields[0].options.choices[0]'],
        [{ code: 'x', type: 'select', options: { choices: [''] } }, 'fields[0].options.choices[0]'],
        [{ code: 'x', type: 'select', options: { choices: ['a'], multiple: true } }, 'fields[0].options.multiple'],
        [{ code: 'x', type: 'text', options: { maxLength: 5, pattern: '.*' } }, 'fields[0].options.pattern'],
        [{ code: 'x', type: 'number', options: { precision: 2 } }, 'fields[0].options.precision'],
      ];
      for (const [field, path] of cases) {
        const r = await t.post('/api/tables', { name: 'Bad options', fields: [field] });
        const body = expectError(r, 400);
        assertPaths(body, [path]);
      }
      assert.equal(await k.count(), before);
    });

    it('refuses unknown option keys on every one of the eleven types, all reported at once', async () => {
      const fields = ALL_TYPES.map((f) => ({
        ...f,
        options: { ...(f.type === 'select' ? { choices: ['a'] } : {}), bogus: 1 },
      }));
      const body = expectError(await t.post('/api/tables', { name: 'Unknown options', fields }), 400);
      assertPaths(body, fields.map((_, i) => `fields[${i}].options.bogus`));
    });

    it('refuses options of the wrong shape', async () => {
      for (const options of [[], 'maxLength', 5, null, true, [{ maxLength: 5 }]]) {
        const r = await t.post('/api/tables', { name: 'Options shape', fields: [{ code: 'x', type: 'text', options }] });
        assertPaths(expectError(r, 400), ['fields[0].options']);
      }
    });
  });

  describe('create-many', () => {
    it('creates several tables with their SQL tables in one request', async () => {
      const before = await k.physicalTableCount();
      const r = await t.post('/api/tables/create-many', [
        { code: 'cm_one', name: 'One', fields: [{ code: 'a', type: 'text', required: true }] },
        { code: 'cm_two', name: 'Two', fields: [{ code: 'b', type: 'number' }] },
      ]);
      assert.equal(r.status, 201, r.text);
      assert.deepEqual(r.body.data.map((x: Table) => x.fields.map((f) => f.code)), [['a'], ['b']]);
      assert.equal(await k.physicalTableCount(), before + 2);
      for (const x of r.body.data as Table[]) {
        assert.deepEqual(await k.columnNames(x.id), k.expectedColumns(x.fields));
        assert.deepEqual(await k.get(x.id), x);
      }
    });

    it('undoes the SQL tables already made when a later table fails', async () => {
      const tables = await k.count();
      const physical = await k.physicalTableCount();
      const clash = await t.post('/api/tables/create-many', [
        { code: 'cm_dup', name: 'First', fields: [{ code: 'a', type: 'text' }] },
        { code: 'cm_dup', name: 'Second', fields: [{ code: 'b', type: 'text' }] },
      ]);
      const body = expectError(clash, 409);
      assert.match(body.message as string, /^\[1\]/);
      assert.equal(await k.count(), tables);
      assert.equal(await k.physicalTableCount(), physical);
      expectError(await t.get('/api/tables/cm_dup'), 404);

      const invalid = await t.post('/api/tables/create-many', [
        { code: 'cm_fine', name: 'Fine', fields: [{ code: 'a', type: 'text' }] },
        { code: 'cm_bad', name: 'Bad', fields: [{ code: 'createdAt', type: 'text' }] },
      ]);
      assertPaths(expectError(invalid, 400), ['[1].fields[0].code']);
      assert.equal(await k.count(), tables);
      assert.equal(await k.physicalTableCount(), physical);
    });
  });

  describe('codes', () => {
    it('accepts table codes matching ^[A-Za-z][A-Za-z0-9_-]{0,63}$', async () => {
      for (const code of ['q', 'Z', 'a-b_c-9', 'Orders-2024_v2', `a${'b'.repeat(63)}`]) {
        const table = await k.create({ code, name: code });
        assert.equal(table.code, code);
        assert.equal((await k.get(code)).id, table.id);
      }
    });

    it('refuses table codes off the pattern, including ones that look like SQL', async () => {
      const before = await k.count();
      const bad = [
        '', '1abc', '_abc', '-abc', 'a b', 'a.b', 'a/b', 'äbc', 'abc!', `a${'b'.repeat(64)}`,
        "x'; drop table rh_tables; --", 'orders; delete from rh_fields', 'a"b', 'a)--', 'rh_tables where 1=1',
      ];
      for (const code of bad) {
        const body = expectError(await t.post('/api/tables', { code, name: 'Bad code' }), 400);
        assertPaths(body, ['code']);
      }
      assert.equal(await k.count(), before);
      // The metadata tables are still there and still work.
      assert.equal((await t.get('/api/tables')).status, 200);
    });

    it('refuses a code that is not a string', async () => {
      for (const code of [5, true, ['a'], { a: 1 }]) {
        assertPaths(expectError(await t.post('/api/tables', { code, name: 'x' }), 400), ['code']);
      }
    });

    it('refuses UUID-shaped table codes on create and on update', async () => {
      const before = await k.count();
      for (const code of ['abcdef01-2345-4678-9abc-def012345678', 'ABCDEF01-2345-4678-9ABC-DEF012345678', 'deadbeef-0000-0000-0000-000000000000']) {
        assertPaths(expectError(await t.post('/api/tables', { code, name: 'UUID code' }), 400), ['code']);
      }
      assert.equal(await k.count(), before);
      const table = await k.create({ code: 'uuid_victim', name: 'Victim' });
      const r = await k.put(table.id, { code: 'abcdef01-2345-4678-9abc-def012345678' });
      assertPaths(expectError(r, 400), ['code']);
      assert.equal((await k.get(table.id)).code, 'uuid_victim');
    });

    it('keeps table codes unique: 409 on create and on update, with nothing changed', async () => {
      const first = await k.create({ code: 'unique_code', name: 'First', fields: [{ code: 'a', type: 'text' }] });
      const before = await k.count();
      const dup = await t.post('/api/tables', { code: 'unique_code', name: 'Second', fields: [{ code: 'b', type: 'number' }] });
      expectError(dup, 409);
      assert.match(dup.body.message, /code/);
      assert.equal(await k.count(), before);
      assert.deepEqual(await k.get('unique_code'), first);

      const second = await k.create({ code: 'other_code', name: 'Second' });
      expectError(await k.put(second.id, { code: 'unique_code' }), 409);
      assert.equal((await k.get(second.id)).code, 'other_code');
      assert.deepEqual(await k.get('unique_code'), first);
    });

    it('lets several tables have no code', async () => {
      const a = await k.create({ name: 'No code A' });
      const b = await k.create({ name: 'No code B', code: null });
      assert.equal(a.code, null);
      assert.equal(b.code, null);
    });

    it('accepts field codes matching ^[A-Za-z][A-Za-z0-9_]{0,63}$', async () => {
      const codes = ['a', 'Z9', 'snake_case_2', 'camelCase', `f${'x'.repeat(63)}`, 'ID', 'Id', 'created_at', 'select', 'from'];
      const table = await k.create({ name: 'Field codes', fields: codes.map((code) => ({ code, type: 'text' })) });
      assert.deepEqual(table.fields.map((f) => f.code), codes);
    });

    it('refuses field codes off the pattern', async () => {
      const bad = ['', '1a', '_a', 'a-b', 'a b', 'a.b', 'é', "a'b", 'a;drop', `f${'x'.repeat(64)}`];
      const fields = bad.map((code) => ({ code, type: 'text' }));
      const body = expectError(await t.post('/api/tables', { name: 'Bad field codes', fields }), 400);
      assertPaths(body, bad.map((_, i) => `fields[${i}].code`));
    });

    it('refuses a field code used twice in one table', async () => {
      const r = await t.post('/api/tables', {
        name: 'Dup fields',
        fields: [{ code: 'a', type: 'text' }, { code: 'b', type: 'text' }, { code: 'a', type: 'number' }],
      });
      const body = expectError(r, 400);
      assert.deepEqual(detailPaths(body), ['fields[2].code']);
      assert.match(body.message as string, /\ba\b/);
    });

    it('allows the same field code in two different tables', async () => {
      const a = await k.create({ name: 'Shared A', fields: [{ code: 'shared', type: 'text' }] });
      const b = await k.create({ name: 'Shared B', fields: [{ code: 'shared', type: 'number' }] });
      assert.notEqual(a.fields[0].id, b.fields[0].id);
    });

    it('refuses the reserved field codes id, createdAt, updatedAt, createdBy, updatedBy', async () => {
      const before = await k.count();
      const reserved = ['id', 'createdAt', 'updatedAt', 'createdBy', 'updatedBy'];
      for (const code of reserved) {
        const body = expectError(await t.post('/api/tables', { name: 'Reserved', fields: [{ code, type: 'text' }] }), 400);
        assertPaths(body, ['fields[0].code']);
        assert.match(body.message as string, new RegExp(code));
      }
      const all = expectError(
        await t.post('/api/tables', { name: 'Reserved', fields: reserved.map((code) => ({ code, type: 'text' })) }),
        400,
      );
      assertPaths(all, reserved.map((_, i) => `fields[${i}].code`));
      assert.equal(await k.count(), before);
    });

    it('refuses an unknown or missing type and a missing code', async () => {
      for (const type of ['string', 'Text', 'integer', 'json', 'multiSelect', '']) {
        assertPaths(expectError(await t.post('/api/tables', { name: 'T', fields: [{ code: 'x', type }] }), 400), ['fields[0].type']);
      }
      assertPaths(expectError(await t.post('/api/tables', { name: 'T', fields: [{ code: 'x' }] }), 400), ['fields[0].type']);
      assertPaths(expectError(await t.post('/api/tables', { name: 'T', fields: [{ type: 'text' }] }), 400), ['fields[0].code']);
    });

    it('reports every problem of the body shape at once', async () => {
      const r = await t.post('/api/tables', {
        code: '9bad',
        name: '',
        description: 7,
        extra: true,
        fields: [
          { code: 'ok', type: 'text' },
          { code: 'x', type: 'nope' },
          { code: 'bad-code', type: 'text' },
          { code: 'y', type: 'text', bogus: 1 },
          { code: 'z', type: 'text', required: 'yes', name: '' },
        ],
      });
      assertPaths(expectError(r, 400), [
        'code', 'name', 'description', 'extra', 'fields[1].type', 'fields[2].code', 'fields[3].bogus', 'fields[4].required', 'fields[4].name',
      ]);
    });

    it('reports every problem of the field definitions at once', async () => {
      const r = await t.post('/api/tables', {
        name: 'Many problems',
        fields: [
          { code: 'id', type: 'text' },
          { code: 'dup', type: 'text' },
          { code: 'dup', type: 'number' },
          { code: 'sel', type: 'select' },
          { code: 'num', type: 'number', options: { min: 3, max: 1 } },
          { code: 'updatedBy', type: 'boolean' },
          { type: 'select' },
        ],
      });
      assertPaths(expectError(r, 400), [
        'fields[0].code', 'fields[2].code', 'fields[3].options.choices', 'fields[4].options', 'fields[5].code', 'fields[6].code',
        'fields[6].options.choices',
      ]);
    });

    it('reports a UUID-shaped table code together with the problems of its fields', async () => {
      const r = await t.post('/api/tables', {
        code: 'abcdef01-2345-4678-9abc-def012345678',
        name: 'Mixed',
        fields: [{ code: 'createdAt', type: 'text' }, { code: 'a', type: 'text' }, { code: 'a', type: 'text' }],
      });
      assertPaths(expectError(r, 400), ['code', 'fields[0].code', 'fields[2].code']);
    });

    it(
      'reports shape problems and definition problems of one body together',
      async () => {
      const r = await t.post('/api/tables', {
        name: 'Mixed',
        fields: [{ code: 'a', type: 'unknownType' }, { code: 'b', type: 'text' }, { code: 'b', type: 'text' }, { code: 'id', type: 'text' }],
      });
      assertPaths(expectError(r, 400), ['fields[0].type', 'fields[2].code', 'fields[3].code']);
      },
    );
  });

  describe('read', () => {
    it('finds a table by id, by upper-case id and by code; unknown ones are 404', async () => {
      const table = await k.create({ code: 'lookup', name: 'Lookup', fields: [{ code: 'a', type: 'text' }] });
      assert.deepEqual(await k.get(table.id), table);
      assert.deepEqual(await k.get(table.id.toUpperCase()), table);
      assert.deepEqual(await k.get('lookup'), table);
      expectError(await t.get('/api/tables/no_such_table'), 404);
      expectError(await t.get('/api/tables/LOOKUP'), 404);
      expectError(await t.get('/api/tables/00000000-0000-4000-8000-000000000000'), 404);
      expectError(await t.get(`/api/tables/${table.fields[0].id}`), 404);
    });

    it('follows a code change: the new code finds the table, the old one is 404', async () => {
      const table = await k.create({ code: 'old_code', name: 'Moving' });
      const r = await k.put('old_code', { code: 'new_code' });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.code, 'new_code');
      expectError(await t.get('/api/tables/old_code'), 404);
      assert.equal((await k.get('new_code')).id, table.id);
      const cleared = await k.put('new_code', { code: null });
      assert.equal(cleared.status, 200, cleared.text);
      assert.equal(cleared.body.code, null);
      expectError(await t.get('/api/tables/new_code'), 404);
    });

    it('refuses an unknown id or code on PUT and DELETE with 404', async () => {
      expectError(await k.put('00000000-0000-4000-8000-000000000000', { name: 'x' }), 404);
      expectError(await k.put('nothing_here', { name: 'x' }), 404);
      expectError(await t.delete('/api/tables/00000000-0000-4000-8000-000000000000'), 404);
      expectError(await t.delete('/api/tables/nothing_here'), 404);
    });
  });

  describe('list', () => {
    it('lists tables with their fields, filtered and sorted on code and name', async () => {
      const made = [
        await k.create({ code: 'lst-b', name: 'List Beta', fields: [{ code: 'x', type: 'text' }] }),
        await k.create({ code: 'lst-a', name: 'List Alpha', fields: [{ code: 'y', type: 'number' }, { code: 'z', type: 'list' }] }),
        await k.create({ code: 'lst-c', name: 'List Gamma' }),
      ];
      const byCode = await t.get('/api/tables', { query: { filter: { code: { like: 'lst-%' } }, sorting: { code: 'asc' } } });
      assert.equal(byCode.status, 200, byCode.text);
      assert.deepEqual(byCode.body.data.map((x: Table) => x.code), ['lst-a', 'lst-b', 'lst-c']);
      assert.deepEqual(byCode.body.data, [made[1], made[0], made[2]]);
      assert.deepEqual(byCode.body.pagination, { limit: 50, count: 3, offset: 0, nextOffset: null });

      const desc = await t.get('/api/tables', { query: { filter: { name: { like: 'List %' } }, sorting: { name: 'desc' } } });
      assert.deepEqual(desc.body.data.map((x: Table) => x.name), ['List Gamma', 'List Beta', 'List Alpha']);

      const one = await t.get('/api/tables', { query: { filter: { code: { eq: 'lst-a' } } } });
      assert.equal(one.body.data.length, 1);
      assert.deepEqual(one.body.data[0].fields.map((f: { code: string }) => f.code), ['y', 'z']);

      const paged = await t.get('/api/tables', {
        query: { filter: { code: { like: 'lst-%' } }, sorting: { code: 'asc' }, paging: { limit: 2, offset: 0 } },
      });
      assert.deepEqual(paged.body.data.map((x: Table) => x.code), ['lst-a', 'lst-b']);
      assert.equal(paged.body.pagination.nextOffset, 2);
    });

    it('refuses filters and sorting on fields, version or unknown attributes', async () => {
      expectError(await t.get('/api/tables', { query: { filter: { fields: { is: null } } } }), 400);
      expectError(await t.get('/api/tables', { query: { filter: { version: { eq: 1 } } } }), 400);
      expectError(await t.get('/api/tables', { query: { sorting: { fields: 'asc' } } }), 400);
      expectError(await t.get('/api/tables', { query: { sorting: { nope: 'asc' } } }), 400);
    });

    it('never shows the internal version', async () => {
      const table = await k.create({ name: 'Versioned', fields: [{ code: 'a', type: 'text' }] });
      assert.equal((await k.put(table.id, { name: 'Versioned 2' })).status, 200);
      const r = await t.get('/api/tables', { query: { filter: { id: { eq: table.id } } } });
      assert.equal(r.body.data.length, 1);
      assert.equal('version' in r.body.data[0], false);
      assert.equal('version' in (await k.get(table.id)), false);
    });
  });

  describe('delete', () => {
    it('drops the SQL table with its rows and its fields; the code can be reused', async () => {
      const table = await k.create({
        code: 'doomed', name: 'Doomed',
        fields: [{ code: 'a', type: 'text', required: true }, { code: 'n', type: 'number' }],
      });
      await k.insert(table.id, { [table.fields[0].id]: 'kept?', [table.fields[1].id]: 3 });
      assert.ok(await k.tableExists(table.id));

      const r = await t.delete('/api/tables/doomed');
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body, table);
      assert.equal(await k.tableExists(table.id), false);
      const fieldRows = await k.db.selectFrom('rh_fields').select('id').where('tableId', '=', table.id).execute();
      assert.deepEqual(fieldRows, []);
      expectError(await t.get(`/api/tables/${table.id}`), 404);
      expectError(await t.get('/api/tables/doomed'), 404);
      expectError(await t.delete(`/api/tables/${table.id}`), 404);

      const again = await k.create({ code: 'doomed', name: 'Reborn', fields: [{ code: 'a', type: 'text' }] });
      assert.notEqual(again.id, table.id);
      assert.notEqual(again.fields[0].id, table.fields[0].id);
      assert.deepEqual(await k.rows(again.id), []);
      assert.equal((await k.get('doomed')).name, 'Reborn');
    });

    it('deletes by id and leaves other tables alone', async () => {
      const keep = await k.create({ name: 'Keep', fields: [{ code: 'a', type: 'text' }] });
      await k.insert(keep.id, { [keep.fields[0].id]: 'stay' });
      const gone = await k.create({ name: 'Gone', fields: [{ code: 'a', type: 'text' }] });
      assert.equal((await t.delete(`/api/tables/${gone.id}`)).status, 200);
      assert.deepEqual(await k.get(keep.id), keep);
      assert.deepEqual(Object.values(await k.columnValues(keep.id, keep.fields[0].id)), ['stay']);
    });

    it('deletes several tables at once with delete-many, or none when one is unknown', async () => {
      const a = await k.create({ name: 'Many A', fields: [{ code: 'a', type: 'text' }] });
      const b = await k.create({ name: 'Many B', fields: [{ code: 'b', type: 'number' }] });
      const bad = await t.delete('/api/tables/delete-many', [a.id, '00000000-0000-4000-8000-000000000000']);
      expectError(bad, 404);
      assert.ok(await k.tableExists(a.id));
      assert.deepEqual(await k.get(a.id), a);

      const r = await t.delete('/api/tables/delete-many', [a.id, b.id]);
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body.data, [a, b]);
      assert.equal(await k.tableExists(a.id), false);
      assert.equal(await k.tableExists(b.id), false);
    });
  });

  describe('bad input', () => {
    it('refuses wrong types everywhere in a create body, creating nothing', async () => {
      const before = await k.count();
      const cases: [unknown, string][] = [
        [{ name: 5 }, 'name'],
        [{ name: null }, 'name'],
        [{ name: '' }, 'name'],
        [{ name: 'x'.repeat(256) }, 'name'],
        [{}, 'name'],
        [{ name: 'x', description: 5 }, 'description'],
        [{ name: 'x', description: 'd'.repeat(10_001) }, 'description'],
        [{ name: 'x', fields: 'text' }, 'fields'],
        [{ name: 'x', fields: { code: 'a', type: 'text' } }, 'fields'],
        [{ name: 'x', fields: null }, 'fields'],
        [{ name: 'x', fields: [1] }, 'fields[0]'],
        [{ name: 'x', fields: [null] }, 'fields[0]'],
        [{ name: 'x', fields: ['a'] }, 'fields[0]'],
        [{ name: 'x', fields: [[{ code: 'a', type: 'text' }]] }, 'fields[0]'],
        [{ name: 'x', fields: [{ code: 5, type: 'text' }] }, 'fields[0].code'],
        [{ name: 'x', fields: [{ code: null, type: 'text' }] }, 'fields[0].code'],
        [{ name: 'x', fields: [{ code: 'a', type: 5 }] }, 'fields[0].type'],
        [{ name: 'x', fields: [{ code: 'a', type: null }] }, 'fields[0].type'],
        [{ name: 'x', fields: [{ code: 'a', type: 'text', name: 5 }] }, 'fields[0].name'],
        [{ name: 'x', fields: [{ code: 'a', type: 'text', name: '' }] }, 'fields[0].name'],
        [{ name: 'x', fields: [{ code: 'a', type: 'text', name: 'n'.repeat(256) }] }, 'fields[0].name'],
        [{ name: 'x', fields: [{ code: 'a', type: 'text', required: 'true' }] }, 'fields[0].required'],
        [{ name: 'x', fields: [{ code: 'a', type: 'text', required: null }] }, 'fields[0].required'],
        [{ name: 'x', fields: [{ code: 'a', type: 'text', required: 1 }] }, 'fields[0].required'],
        [{ name: 'x', fields: [{ code: 'a', type: 'text', id: 5 }] }, 'fields[0].id'],
        [{ name: 'x', fields: [{ code: 'a', type: 'text', unknown: 1 }] }, 'fields[0].unknown'],
        [{ name: 'x', fields: [{ code: 'a', type: 'text', createdAt: '2024-01-01T00:00:00Z' }] }, 'fields[0].createdAt'],
        [{ name: 'x', id: '00000000-0000-4000-8000-000000000001' }, 'id'],
        [{ name: 'x', version: 3 }, 'version'],
        [{ name: 'x', createdAt: '2024-01-01T00:00:00Z' }, 'createdAt'],
        [{ name: 'x', rows: [] }, 'rows'],
      ];
      for (const [body, path] of cases) {
        const r = await t.post('/api/tables', body);
        assertPaths(expectError(r, 400), [path]);
      }
      assert.equal(await k.count(), before);
    });

    it('refuses a NUL character in names, descriptions and choices on both databases', async () => {
      const before = await k.count();
      const cases: [Record<string, unknown>, string][] = [
        [{ name: 'a\u0000b' }, 'name'],
        [{ name: 'x', description: '\u0000' }, 'description'],
        [{ name: 'x', fields: [{ code: 'a', type: 'text', name: 'a\u0000' }] }, 'fields[0].name'],
        [{ name: 'x', fields: [{ code: 'a', type: 'select', options: { choices: ['ok', 'b\u0000'] } }] }, 'fields[0].options.choices[1]'],
      ];
      for (const [body, path] of cases) assertPaths(expectError(await t.post('/api/tables', body), 400), [path]);
      assert.equal(await k.count(), before);
      const table = await k.create({ name: 'NUL target', fields: [{ code: 'a', type: 'text' }] });
      assertPaths(expectError(await k.put(table.id, { fields: [{ id: table.fields[0].id, name: '\u0000' }] }), 400), ['fields[0].name']);
      assert.deepEqual(await k.get(table.id), table);
      expectError(await t.get('/api/tables/a%00b'), 404);
    });

    it('refuses a field id on create: there is no field to update yet', async () => {
      const r = await t.post('/api/tables', { name: 'x', fields: [{ id: '00000000-0000-4000-8000-000000000001', code: 'a', type: 'text' }] });
      assertPaths(expectError(r, 400), ['fields[0].id']);
    });

    it('refuses too long codes (65 characters) for tables and fields', async () => {
      const long = `a${'b'.repeat(64)}`;
      assert.equal(long.length, 65);
      assertPaths(expectError(await t.post('/api/tables', { code: long, name: 'x' }), 400), ['code']);
      assertPaths(expectError(await t.post('/api/tables', { name: 'x', fields: [{ code: long, type: 'text' }] }), 400), ['fields[0].code']);
    });

    it('accepts 500 fields, each with its column', async () => {
      const fields = Array.from({ length: 500 }, (_, i) => ({ code: `f${i}`, type: i % 2 === 0 ? 'text' : 'record' }));
      const table = await k.create({ name: 'Widest', fields });
      assert.equal(table.fields.length, 500);
      assert.deepEqual(await k.columnNames(table.id), k.expectedColumns(table.fields));
    });

    it('refuses more than 500 fields', async () => {
      const fields = Array.from({ length: 501 }, (_, i) => ({ code: `f${i}`, type: 'text' }));
      assertPaths(expectError(await t.post('/api/tables', { name: 'Wide', fields }), 400), ['fields']);
    });

    it('refuses bodies that are not a JSON object', async () => {
      for (const body of [[], [{ name: 'x' }], 'x', 5, null]) {
        expectError(await t.request('POST', '/api/tables', { raw: JSON.stringify(body), headers: { 'content-type': 'application/json' } }), 400);
      }
      expectError(await t.request('POST', '/api/tables', { raw: '{"name": ', headers: { 'content-type': 'application/json' } }), 400);
      expectError(await t.request('POST', '/api/tables', { raw: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 415);
      expectError(await t.request('POST', '/api/tables'), 400);
    });

    it('needs an API key', async () => {
      expectError(await t.post('/api/tables', { name: 'x' }, { key: null }), 401);
      expectError(await t.get('/api/tables', { key: 'rh_wrong_key_0000000000000000000000000000' }), 401);
    });
  });
});
