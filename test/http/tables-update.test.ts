import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TableCatalog } from '../../src/store/table-catalog.ts';
import { TableMemo } from '../../src/domain/compiled-table.ts';
import { physicalColumn, physicalTable } from '../../src/store/user-tables.ts';
import { type Reply, type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';
import { type Field, type Table, TableKit, assertPaths } from './tables-support.ts';

/** PUT /api/tables/{id} (CONTRACT §4): metadata and the real table change together, or not at all. */

eachDatabase('tables: update', (kind) => {
  let t: TestApp;
  let k: TableKit;
  before(async () => {
    t = await startApp(kind);
    k = new TableKit(t);
  });
  after(() => t.close());

  /** Each field given by id only: the list that changes nothing. */
  const same = (table: Table) => table.fields.map((f) => ({ id: f.id }));

  async function ok(r: Reply): Promise<Table> {
    assert.equal(r.status, 200, r.text);
    return r.body as Table;
  }

  /** A table with text `a`, number `n`, optional, and two rows: one full, one with nulls. */
  async function seeded(code: string): Promise<{ table: Table; a: Field; n: Field; full: string; sparse: string }> {
    const table = await k.create({
      code, name: code,
      fields: [{ code: 'a', type: 'text' }, { code: 'n', type: 'number' }],
    });
    const [a, n] = table.fields;
    const full = await k.insert(table.id, { [a.id]: 'alpha', [n.id]: 1 }, 'row-full');
    const sparse = await k.insert(table.id, { [a.id]: null, [n.id]: 2 }, 'row-sparse');
    return { table, a, n, full, sparse };
  }

  describe('table attributes', () => {
    it('changes name and description; leaves fields and data alone when fields is absent', async () => {
      const { table, a } = await seeded('attrs');
      const updated = await ok(await k.put(table.id, { name: 'Renamed', description: 'now described' }));
      assert.equal(updated.name, 'Renamed');
      assert.equal(updated.description, 'now described');
      assert.deepEqual(updated.fields, table.fields);
      assert.equal(updated.createdAt, table.createdAt);
      assert.ok(updated.updatedAt >= table.updatedAt);
      assert.deepEqual(await k.columnValues(table.id, a.id), { 'row-full': 'alpha', 'row-sparse': null });
      const cleared = await ok(await k.put(table.id, { description: null }));
      assert.equal(cleared.description, null);
      assert.equal(cleared.name, 'Renamed');
    });

    it('refuses an empty name, wrong types and unknown properties, changing nothing', async () => {
      const { table } = await seeded('attrs_bad');
      const before = await k.snapshot(table.id);
      const cases: [Record<string, unknown>, string][] = [
        [{ name: '' }, 'name'],
        [{ name: null }, 'name'],
        [{ name: 5 }, 'name'],
        [{ description: [] }, 'description'],
        [{ code: 5 }, 'code'],
        [{ code: 'has space' }, 'code'],
        [{ code: `a${'b'.repeat(64)}` }, 'code'],
        [{ fields: 'a' }, 'fields'],
        [{ fields: null }, 'fields'],
        [{ fields: {} }, 'fields'],
        [{ fields: [5] }, 'fields[0]'],
        [{ fields: [{ id: table.fields[0].id, bogus: 1 }] }, 'fields[0].bogus'],
        [{ fields: [{ id: table.fields[0].id, required: 'no' }] }, 'fields[0].required'],
        [{ fields: [{ id: table.fields[0].id, name: '' }] }, 'fields[0].name'],
        [{ fields: [{ id: table.fields[0].id, options: [] }] }, 'fields[0].options'],
        [{ fields: [{ id: 7 }] }, 'fields[0].id'],
        [{ version: 9 }, 'version'],
        [{ createdBy: t.ownerId }, 'createdBy'],
      ];
      for (const [body, path] of cases) assertPaths(expectError(await k.put(table.id, body), 400), [path]);
      expectError(await k.put(table.id, { id: '00000000-0000-4000-8000-000000000000', name: 'x' }), 400);
      expectError(await t.request('PUT', `/api/tables/${table.id}`, { raw: '[]', headers: { 'content-type': 'application/json' } }), 400);
      assert.deepEqual(await k.snapshot(table.id), before);
    });
  });

  describe('fields', () => {
    it('renames a field: name only, same column, same data', async () => {
      const { table, a, n } = await seeded('rename');
      const updated = await ok(await k.put(table.id, { fields: [{ id: a.id, name: 'Alpha title' }, { id: n.id }] }));
      assert.deepEqual(updated.fields, [{ ...a, name: 'Alpha title' }, n]);
      assert.deepEqual(await k.columnNames(table.id), k.expectedColumns(table.fields));
      assert.deepEqual(await k.columnValues(table.id, a.id), { 'row-full': 'alpha', 'row-sparse': null });
      assert.deepEqual((await k.get(table.id)).fields, updated.fields);
    });

    it('changes a field code: the column and its data stay', async () => {
      const { table, a, n } = await seeded('recode');
      const before = await k.rows(table.id);
      const updated = await ok(await k.put(table.id, { fields: [{ id: a.id, code: 'title' }, { id: n.id }] }));
      assert.deepEqual(updated.fields[0], { ...a, code: 'title' });
      // The name was not given, so it stays what it was (it had defaulted to the old code).
      assert.equal(updated.fields[0].name, 'a');
      assert.deepEqual(await k.columnNames(table.id), k.expectedColumns(table.fields));
      assert.deepEqual(await k.rows(table.id), before);
    });

    it('makes a field required when no row holds null there, and the column becomes NOT NULL', async () => {
      const { table, a, n } = await seeded('req_ok');
      const before = await k.rows(table.id);
      const updated = await ok(await k.put(table.id, { fields: [{ id: a.id }, { id: n.id, required: true }] }));
      assert.equal(updated.fields[1].required, true);
      assert.equal(updated.fields[0].required, false);
      assert.deepEqual(await k.rows(table.id), before);
      const notNull = await k.columns(table.id);
      assert.equal(notNull[physicalColumn(n.id)], true);
      assert.equal(notNull[physicalColumn(a.id)], false);
      await assert.rejects(k.insert(table.id, { [a.id]: 'x', [n.id]: null }));
      await k.insert(table.id, { [a.id]: null, [n.id]: 3 });
    });

    it('refuses to make a field required while rows hold null there, changing nothing', async () => {
      const { table, a, n } = await seeded('req_nulls');
      const before = await k.snapshot(table.id);
      const r = await k.put(table.id, { name: 'Should not stick', fields: [{ id: a.id, required: true }, { id: n.id, code: 'renamed' }] });
      const body = expectError(r, 400);
      assertPaths(body, ['fields[0].required']);
      assert.match(body.message as string, /\ba\b/);
      assert.deepEqual(await k.snapshot(table.id), before);
      // Still nullable.
      await k.insert(table.id, { [a.id]: null, [n.id]: 9 });
    });

    it('makes a required field optional, and the column accepts null', async () => {
      const table = await k.create({ name: 'Unrequire', fields: [{ code: 'a', type: 'text', required: true }, { code: 'b', type: 'date' }] });
      const [a, b] = table.fields;
      await k.insert(table.id, { [a.id]: 'kept', [b.id]: '2024-02-29' }, 'r1');
      await assert.rejects(k.insert(table.id, { [a.id]: null }));
      const updated = await ok(await k.put(table.id, { fields: [{ id: a.id, required: false }, { id: b.id }] }));
      assert.equal(updated.fields[0].required, false);
      assert.equal((await k.columns(table.id))[physicalColumn(a.id)], false);
      await k.insert(table.id, { [a.id]: null }, 'r2');
      assert.deepEqual(await k.columnValues(table.id, a.id), { r1: 'kept', r2: null });
      assert.deepEqual(await k.columnValues(table.id, b.id), { r1: '2024-02-29', r2: null });
    });

    it('adds a field: a new empty column, the other data preserved', async () => {
      const { table, a, n } = await seeded('add');
      const before = await k.rows(table.id);
      const updated = await ok(await k.put(table.id, {
        fields: [{ id: a.id }, { id: n.id }, { code: 'tags', type: 'list' }, { code: 'color', name: 'Colour', type: 'select', options: { choices: ['red'] } }],
      }));
      assert.equal(updated.fields.length, 4);
      const [, , tags, color] = updated.fields;
      assert.deepEqual({ ...tags, id: '' }, { id: '', code: 'tags', name: 'tags', type: 'list', required: false, options: {} });
      assert.deepEqual({ ...color, id: '' }, { id: '', code: 'color', name: 'Colour', type: 'select', required: false, options: { choices: ['red'] } });
      assert.deepEqual(await k.columnNames(table.id), k.expectedColumns(updated.fields));
      const after = await k.rows(table.id);
      assert.deepEqual(
        after.map((r) => ({ ...r, [physicalColumn(tags.id)]: undefined, [physicalColumn(color.id)]: undefined })),
        before.map((r) => ({ ...r, [physicalColumn(tags.id)]: undefined, [physicalColumn(color.id)]: undefined })),
      );
      for (const r of after) {
        assert.equal(r[physicalColumn(tags.id)], null);
        assert.equal(r[physicalColumn(color.id)], null);
      }
      // The new column takes data.
      await k.insert(table.id, { [tags.id]: k.sample('list'), [color.id]: 'red' });
      assert.deepEqual((await k.get(table.id)).fields, updated.fields);
    });

    it('adds a required field to a table without rows', async () => {
      const table = await k.create({ name: 'Add required empty', fields: [{ code: 'a', type: 'text' }] });
      const updated = await ok(await k.put(table.id, { fields: [{ id: table.fields[0].id }, { code: 'must', type: 'number', required: true }] }));
      const must = updated.fields[1];
      assert.equal(must.required, true);
      assert.equal((await k.columns(table.id))[physicalColumn(must.id)], true);
      await assert.rejects(k.insert(table.id, { [table.fields[0].id]: 'x' }));
      await k.insert(table.id, { [must.id]: 1 });
    });

    it('refuses to add a required field to a table that has rows, changing nothing', async () => {
      const { table, a, n } = await seeded('add_required');
      const before = await k.snapshot(table.id);
      const r = await k.put(table.id, { fields: [{ id: a.id }, { id: n.id }, { code: 'must', type: 'text', required: true }] });
      const body = expectError(r, 400);
      assertPaths(body, ['fields[2].required']);
      assert.match(body.message as string, /must/);
      assert.deepEqual(await k.snapshot(table.id), before);
    });

    it('removes a field with its column and data; re-adding the code starts empty', async () => {
      const { table, a, n } = await seeded('remove');
      const updated = await ok(await k.put(table.id, { fields: [{ id: n.id }] }));
      assert.deepEqual(updated.fields, [n]);
      assert.deepEqual(await k.columnNames(table.id), k.expectedColumns([n]));
      assert.deepEqual(await k.columnValues(table.id, n.id), { 'row-full': 1, 'row-sparse': 2 });
      const fieldRows = await k.db.selectFrom('rh_fields').select('id').where('id', '=', a.id).execute();
      assert.deepEqual(fieldRows, []);

      const readded = await ok(await k.put(table.id, { fields: [{ id: n.id }, { code: 'a', type: 'text' }] }));
      const a2 = readded.fields[1];
      assert.notEqual(a2.id, a.id);
      assert.deepEqual(await k.columnValues(table.id, a2.id), { 'row-full': null, 'row-sparse': null });
      // The old field id is gone for good.
      assertPaths(expectError(await k.put(table.id, { fields: [{ id: n.id }, { id: a.id }] }), 400), ['fields[1].id']);
    });

    it('removes every field with an empty list', async () => {
      const { table } = await seeded('remove_all');
      const updated = await ok(await k.put(table.id, { fields: [] }));
      assert.deepEqual(updated.fields, []);
      assert.deepEqual(await k.columnNames(table.id), k.expectedColumns([]));
      assert.equal((await k.rows(table.id)).length, 2);
    });

    it('removes a required field and an indexed one', async () => {
      const table = await k.create({
        name: 'Remove kinds',
        fields: [{ code: 'r', type: 'text', required: true }, { code: 'd', type: 'date' }, { code: 'j', type: 'record' }, { code: 'keep', type: 'number' }],
      });
      const [r, d, j, keep] = table.fields;
      await k.insert(table.id, { [r.id]: 'x', [d.id]: '2024-01-02', [j.id]: k.sample('record'), [keep.id]: 4 }, 'one');
      const updated = await ok(await k.put(table.id, { fields: [{ id: keep.id }] }));
      assert.deepEqual(updated.fields, [keep]);
      assert.deepEqual(await k.columnNames(table.id), k.expectedColumns([keep]));
      assert.deepEqual(await k.columnValues(table.id, keep.id), { one: 4 });
      // A row without the removed required field is now fine.
      await k.insert(table.id, { [keep.id]: 5 }, 'two');
    });

    it('refuses a different type for an existing field, changing nothing', async () => {
      const { table, a, n } = await seeded('retype');
      const before = await k.snapshot(table.id);
      const r = await k.put(table.id, { fields: [{ id: a.id, type: 'number' }, { id: n.id, type: 'number', name: 'same type is fine' }] });
      const body = expectError(r, 400);
      assertPaths(body, ['fields[0].type']);
      assert.deepEqual(await k.snapshot(table.id), before);
      // Restating the same type is accepted.
      const same = await ok(await k.put(table.id, { fields: [{ id: a.id, type: 'text' }, { id: n.id, type: 'number' }] }));
      assert.deepEqual(same.fields, table.fields);
    });

    it('refuses an unknown field id, a field of another table and a field given twice', async () => {
      const { table, a, n } = await seeded('unknown_id');
      const other = await k.create({ name: 'Other', fields: [{ code: 'a', type: 'text' }] });
      const before = await k.snapshot(table.id);
      assertPaths(expectError(await k.put(table.id, { fields: [{ id: a.id }, { id: '00000000-0000-4000-8000-000000000000', code: 'x' }] }), 400), [
        'fields[1].id',
      ]);
      assertPaths(expectError(await k.put(table.id, { fields: [{ id: a.id }, { id: n.id }, { id: other.fields[0].id }] }), 400), ['fields[2].id']);
      assertPaths(expectError(await k.put(table.id, { fields: [{ id: a.id }, { id: n.id }, { id: a.id, code: 'again' }] }), 400), [
        'fields[2].id',
      ]);
      assertPaths(expectError(await k.put(table.id, { fields: [{ id: a.id }, { id: 'not-a-uuid' }] }), 400), ['fields[1].id']);
      assert.deepEqual(await k.snapshot(table.id), before);
      assert.deepEqual(await k.get(other.id), other);
    });

    it('refuses duplicate, reserved and bad codes in a new list, reporting them all', async () => {
      const { table, a, n } = await seeded('bad_codes');
      const before = await k.snapshot(table.id);
      const r = await k.put(table.id, {
        fields: [{ id: a.id, code: 'updatedAt' }, { id: n.id, code: 'dup' }, { code: 'dup', type: 'text' }, { code: 'x', type: 'select' }],
      });
      assertPaths(expectError(r, 400), ['fields[0].code', 'fields[2].code', 'fields[3].options.choices']);
      // A new field needs a code and a type.
      assertPaths(expectError(await k.put(table.id, { fields: [{ id: a.id }, { type: 'text' }, { code: 'c' }] }), 400), [
        'fields[1].code', 'fields[2].type',
      ]);
      assert.deepEqual(await k.snapshot(table.id), before);
    });

    it('reports the code, definition and data problems of one PUT at once, changing nothing', async () => {
      const { table, a, n } = await seeded('put_all_at_once');
      const before = await k.snapshot(table.id);
      const r = await k.put(table.id, {
        code: 'abcdef01-2345-4678-9abc-def012345678',
        fields: [{ id: a.id, required: true }, { id: n.id, code: 'createdBy' }, { code: 'x', type: 'select' }, { code: 'must', type: 'text', required: true }],
      });
      assertPaths(expectError(r, 400), ['code', 'fields[0].required', 'fields[1].code', 'fields[2].options.choices', 'fields[3].required']);
      assert.deepEqual(await k.snapshot(table.id), before);
    });

    it('changes options and checks them; the new options apply to the stored definition', async () => {
      const table = await k.create({
        name: 'Options change',
        fields: [{ code: 's', type: 'select', options: { choices: ['a', 'b'] } }, { code: 'n', type: 'number', options: { min: 0 } }],
      });
      const [s, n] = table.fields;
      const before = await k.snapshot(table.id);
      assertPaths(expectError(await k.put(table.id, { fields: [{ id: s.id, options: { choices: [] } }, { id: n.id }] }), 400), ['fields[0].options.choices']);
      assertPaths(expectError(await k.put(table.id, { fields: [{ id: s.id }, { id: n.id, options: { min: 0, max: -1 } }] }), 400), ['fields[1].options']);
      assertPaths(expectError(await k.put(table.id, { fields: [{ id: s.id }, { id: n.id, options: { maxLength: 3 } }] }), 400), ['fields[1].options.maxLength']);
      assert.deepEqual(await k.snapshot(table.id), before);
      const updated = await ok(await k.put(table.id, { fields: [{ id: s.id, options: { choices: ['a', 'b', 'c'] } }, { id: n.id, options: {} }] }));
      assert.deepEqual(updated.fields.map((f) => f.options), [{ choices: ['a', 'b', 'c'] }, {}]);
      // Options left out keep their value.
      const kept = await ok(await k.put(table.id, { fields: same(updated) }));
      assert.deepEqual(kept.fields, updated.fields);
    });

    it('swaps the codes of two fields in one PUT; each column keeps its data', async () => {
      const { table, a, n } = await seeded('swap');
      const before = await k.rows(table.id);
      const updated = await ok(await k.put(table.id, { fields: [{ id: a.id, code: 'n' }, { id: n.id, code: 'a' }] }));
      assert.deepEqual(updated.fields, [{ ...a, code: 'n' }, { ...n, code: 'a' }]);
      assert.deepEqual((await k.get(table.id)).fields, updated.fields);
      assert.deepEqual(await k.rows(table.id), before);
      assert.deepEqual(await k.columnValues(table.id, a.id), { 'row-full': 'alpha', 'row-sparse': null });
      // A removed field's code can go to a new field in the same PUT.
      const reused = await ok(await k.put(table.id, { fields: [{ id: a.id }, { code: 'a', type: 'boolean' }] }));
      assert.deepEqual(reused.fields.map((f) => [f.code, f.type]), [['n', 'text'], ['a', 'boolean']]);
      assert.notEqual(reused.fields[1].id, n.id);
    });

    it('rotates three codes and reorders the fields as listed', async () => {
      const table = await k.create({
        name: 'Order',
        fields: [{ code: 'x', type: 'text' }, { code: 'y', type: 'number' }, { code: 'z', type: 'boolean' }],
      });
      const [x, y, z] = table.fields;
      const reordered = await ok(await k.put(table.id, { fields: [{ id: z.id }, { id: x.id }, { id: y.id }] }));
      assert.deepEqual(reordered.fields, [z, x, y]);
      assert.deepEqual((await k.get(table.id)).fields, [z, x, y]);
      const rotated = await ok(await k.put(table.id, { fields: [{ id: x.id, code: 'y' }, { id: y.id, code: 'z' }, { id: z.id, code: 'x' }] }));
      assert.deepEqual(rotated.fields.map((f) => [f.id, f.code]), [[x.id, 'y'], [y.id, 'z'], [z.id, 'x']]);
      const listed = await t.get('/api/tables', { query: { filter: { id: { eq: table.id } } } });
      assert.deepEqual(listed.body.data[0].fields, rotated.fields);
    });

    it('applies several changes in one PUT: remove, add, rename, require, unrequire', async () => {
      const table = await k.create({
        name: 'Many changes',
        fields: [
          { code: 'gone', type: 'text' },
          { code: 'stay', type: 'number', required: true },
          { code: 'tighten', type: 'text' },
          { code: 'j', type: 'list' },
        ],
      });
      const [gone, stay, tighten, j] = table.fields;
      await k.insert(table.id, { [gone.id]: 'bye', [stay.id]: 1, [tighten.id]: 't1', [j.id]: k.sample('list') }, 'r1');
      await k.insert(table.id, { [stay.id]: 2, [tighten.id]: 't2' }, 'r2');
      const indexesBefore = (await k.indexes(table.id)).length;
      const updated = await ok(await k.put(table.id, {
        fields: [
          { id: tighten.id, required: true, code: 'tight' },
          { code: 'fresh', type: 'dateTime' },
          { id: stay.id, required: false, name: 'Stay' },
          { id: j.id },
        ],
      }));
      const fresh = updated.fields[1];
      assert.deepEqual(updated.fields, [
        { ...tighten, code: 'tight', required: true },
        { id: fresh.id, code: 'fresh', name: 'fresh', type: 'dateTime', required: false, options: {} },
        { ...stay, name: 'Stay', required: false },
        j,
      ]);
      assert.deepEqual(await k.columnNames(table.id), k.expectedColumns(updated.fields));
      const notNull = await k.columns(table.id);
      assert.equal(notNull[physicalColumn(tighten.id)], true);
      assert.equal(notNull[physicalColumn(stay.id)], false);
      assert.equal(notNull[physicalColumn(fresh.id)], false);
      assert.deepEqual(await k.columnValues(table.id, tighten.id), { r1: 't1', r2: 't2' });
      assert.deepEqual(await k.columnValues(table.id, stay.id), { r1: 1, r2: 2 });
      assert.deepEqual(await k.columnValues(table.id, fresh.id), { r1: null, r2: null });
      const list = await k.columnValues(table.id, j.id);
      assert.deepEqual(kind === 'sqlite' ? JSON.parse(list.r1 as string) : list.r1, [1, 'two']);
      assert.equal(list.r2, null);
      // Rows keep their system columns.
      const rows = await k.rows(table.id);
      assert.deepEqual(rows.map((r) => [r.id, r.created_by]), [['r1', t.ownerId], ['r2', t.ownerId]]);
      // Sort indexes follow the fields: gone's is dropped, fresh gets one.
      assert.equal((await k.indexes(table.id)).length, indexesBefore);
    });

    it('keeps the sort indexes when a required change rebuilds or alters the table', async () => {
      const table = await k.create({ name: 'Indexes', fields: [{ code: 'a', type: 'text' }, { code: 'b', type: 'number' }, { code: 'c', type: 'list' }] });
      const before = await k.indexes(table.id);
      assert.ok(before.length >= 2, `expected sort indexes, got ${JSON.stringify(before)}`);
      await ok(await k.put(table.id, { fields: [{ id: table.fields[0].id, required: true }, { id: table.fields[1].id }, { id: table.fields[2].id }] }));
      assert.deepEqual(await k.indexes(table.id), before);
    });
  });

  describe('table catalog', () => {
    it('sees every change of a table definition made through the API', async () => {
      const catalog = new TableCatalog(t.database);
      const table = await k.create({ code: 'cat', name: 'Catalog', fields: [{ code: 'a', type: 'text' }] });
      const first = await catalog.find(k.db, 'cat');
      assert.ok(first);
      assert.equal(first.id, table.id);
      assert.equal(first.physical, physicalTable(table.id));
      assert.deepEqual(first.fields, table.fields);
      assert.equal((await catalog.find(k.db, table.id.toUpperCase()))?.id, table.id);

      const updated = await ok(await k.put(table.id, { code: 'cat2', fields: [{ id: table.fields[0].id, code: 'b', required: true }, { code: 'c', type: 'number' }] }));
      assert.equal(await catalog.find(k.db, 'cat'), undefined);
      const second = await catalog.find(k.db, 'cat2');
      assert.ok(second);
      assert.deepEqual(second.fields, updated.fields);
      assert.deepEqual([...second.fieldsByCode.keys()], ['b', 'c']);
      assert.equal(second.fieldsByCode.get('b')?.required, true);

      assert.equal((await t.delete(`/api/tables/${table.id}`)).status, 200);
      assert.equal(await catalog.find(k.db, table.id), undefined);
      assert.equal(await catalog.find(k.db, 'cat2'), undefined);
    });

    it('gives each table version one compiled table, and a new version a new one', async () => {
      const catalog = new TableCatalog(t.database);
      const table = await k.create({ code: 'compiled', name: 'Compiled', fields: [{ code: 'a', type: 'text' }] });
      const first = await catalog.find(k.db, 'compiled');
      assert.ok(first);
      assert.equal((await catalog.find(k.db, table.id))?.compiled, first.compiled);
      assert.deepEqual(first.compiled.columns, ['id', 'created_at', 'updated_at', 'created_by', 'updated_by', physicalColumn(table.fields[0].id)]);
      assert.deepEqual(first.compiled.required, []);
      const memo = new TableMemo('test', () => ({ made: 0 }));
      first.compiled.memo(memo).made++;
      assert.equal(first.compiled.memo(memo).made, 1);

      const updated = await ok(await k.put(table.id, { fields: [{ id: table.fields[0].id, required: true }, { code: 'b', type: 'number' }] }));
      const second = await catalog.find(k.db, 'compiled');
      assert.ok(second);
      assert.notEqual(second.compiled, first.compiled);
      assert.deepEqual(second.compiled.fields.map((f) => [f.code, f.column, f.type.name]), updated.fields.map((f: Field) => [f.code, physicalColumn(f.id), f.type]));
      assert.deepEqual(second.compiled.required.map((f) => f.code), ['a']);
      assert.equal(second.compiled.memo(memo).made, 0);
    });
  });

  describe('atomicity', () => {
    it('undoes DDL already done when the table code then clashes (409)', async () => {
      await k.create({ code: 'atom_taken', name: 'Taken' });
      const { table, a, n } = await seeded('atom_409');
      const before = await k.snapshot(table.id);
      const r = await k.put(table.id, {
        code: 'atom_taken',
        name: 'Never',
        fields: [{ id: n.id, code: 'renamed', required: true }, { code: 'added', type: 'text' }],
      });
      expectError(r, 409);
      assert.deepEqual(await k.snapshot(table.id), before);
      assert.deepEqual(await k.columnValues(table.id, a.id), { 'row-full': 'alpha', 'row-sparse': null });
    });

    it('rejects a PUT with one bad change among good ones as a whole', async () => {
      const { table, a, n } = await seeded('atom_mix');
      const before = await k.snapshot(table.id);
      const bodies = [
        // Remove a, add a field, but make n's options invalid.
        { fields: [{ id: n.id, options: { min: 5, max: 1 } }, { code: 'added', type: 'text' }] },
        // Rename both, add one, and make a (which holds null) required.
        { fields: [{ id: a.id, code: 'b', required: true }, { id: n.id, code: 'a' }, { code: 'c', type: 'date' }] },
        // Remove n, add a required field to a table with rows.
        { fields: [{ id: a.id }, { code: 'req', type: 'text', required: true }] },
        // Good field changes with an invalid table name.
        { name: '', fields: [{ id: a.id }] },
      ];
      for (const body of bodies) {
        expectError(await k.put(table.id, body), 400);
        assert.deepEqual(await k.snapshot(table.id), before, JSON.stringify(body));
      }
    });

    it('update-many applies every table change or none', async () => {
      const one = await seeded('many_one');
      const two = await seeded('many_two');
      const before = [await k.snapshot(one.table.id), await k.snapshot(two.table.id)];
      const r = await t.put('/api/tables/update-many', [
        { id: one.table.id, fields: [{ id: one.n.id }, { code: 'extra', type: 'text' }] },
        { id: two.table.id, fields: [{ id: two.a.id, required: true }, { id: two.n.id }] },
      ]);
      const body = expectError(r, 400);
      assert.match(body.message as string, /^\[1\]/);
      assert.deepEqual([await k.snapshot(one.table.id), await k.snapshot(two.table.id)], before);

      const good = await t.put('/api/tables/update-many', [
        { id: one.table.id, fields: [{ id: one.n.id }, { code: 'extra', type: 'text' }] },
        { id: two.table.id, fields: [{ id: two.a.id, code: 'z' }, { id: two.n.id, required: true }] },
      ]);
      assert.equal(good.status, 200, good.text);
      assert.deepEqual(good.body.data.map((x: Table) => x.fields.map((f) => f.code)), [['n', 'extra'], ['z', 'n']]);
      assert.deepEqual(await k.columnNames(one.table.id), k.expectedColumns(good.body.data[0].fields));
      assert.equal((await k.columns(two.table.id))[physicalColumn(two.n.id)], true);
    });
  });

  describe('concurrent changes', () => {
    it('row writes racing a field removal answer 201 or 409 (send again), never a 500', async () => {
      const made = await t.post('/api/tables', { code: 'racing_rows', name: 'R', fields: [{ code: 'a', type: 'text' }, { code: 'b', type: 'text' }] });
      assert.equal(made.status, 201, made.text);
      const writes = Array.from({ length: 40 }, () => t.post('/api/tables/racing_rows/rows', { values: { a: 'x', b: 'y' } }));
      const put = t.put(`/api/tables/${made.body.id}`, { fields: [{ id: made.body.fields[0].id }] });
      const replies = await Promise.all([...writes, put]);
      assert.equal(replies[40].status, 200, replies[40].text);
      for (const r of replies.slice(0, 40)) {
        if (r.status === 409) expectError(r, 409);
        else assert.ok(r.status === 201 || r.status === 400, `${r.status} ${r.text}`);
      }
    });

    it('two PUTs of one table\'s fields at once take turns: the definition and the SQL table agree afterwards', async () => {
      for (let round = 0; round < 4; round++) {
        const made = await t.post('/api/tables', { code: `race${round}`, name: 'Race', fields: [{ code: 'a', type: 'text' }, { code: 'b', type: 'text' }] });
        assert.equal(made.status, 201, made.text);
        const [a, b] = made.body.fields;
        const id = made.body.id as string;
        const replies = await Promise.all([
          t.put(`/api/tables/${id}`, { fields: [{ id: a.id }] }),
          t.put(`/api/tables/${id}`, { fields: [{ id: a.id }, { id: b.id }, { code: 'c', type: 'text' }] }),
        ]);
        for (const r of replies) assert.ok(r.status === 200 || r.status === 400, `${r.status} ${r.text}`);
        const def = await t.get(`/api/tables/${id}`);
        const values = Object.fromEntries((def.body.fields as { code: string }[]).map((f) => [f.code, 'x']));
        const row = await t.post(`/api/tables/${id}/rows`, { values });
        assert.equal(row.status, 201, row.text);
        const list = await t.get(`/api/tables/${id}/rows`);
        assert.equal(list.status, 200, list.text);
        assert.deepEqual(Object.keys(list.body.data[0].values).sort(), Object.keys(values).sort());
      }
    });
  });
});
