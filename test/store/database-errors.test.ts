import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { sql } from 'kysely';
import { ServiceError } from '../../src/domain/errors.ts';
import { type Writing, classifyDatabaseError, toServiceError } from '../../src/store/database-errors.ts';
import { serviceErrorBody } from '../../src/http/error-body.ts';
import { statusOf } from '../../src/http/error-status.ts';
import { physicalColumn, physicalTable } from '../../src/store/user-tables.ts';
import { type TestApp, eachDatabase, startApp } from '../support/harness.ts';

/**
 * toServiceError, the one place database errors become ServiceErrors (over classifyDatabaseError,
 * the one classification), on errors each real database raises: a code and status for what a
 * request can cause, nothing for what only a fault can.
 */

/** The error the statement fails with. */
async function failure(statement: Promise<unknown>): Promise<unknown> {
  try {
    await statement;
  } catch (err) {
    return err;
  }
  return assert.fail('the statement did not fail');
}

eachDatabase('toServiceError', (kind) => {
  let t: TestApp;
  let tableId: string;
  let fieldIds: Record<string, string>;
  const classify = (err: unknown, writing?: Writing) => toServiceError(err, t.database.dialect, writing);

  before(async () => {
    t = await startApp(kind);
    const table = await t.post('/api/tables', {
      name: 'Errors',
      code: 'errors',
      fields: [
        { code: 'title', type: 'text' },
        { code: 'note', type: 'text' },
      ],
    });
    assert.equal(table.status, 201, table.text);
    tableId = table.body.id;
    fieldIds = Object.fromEntries(table.body.fields.map((f: { code: string; id: string }) => [f.code, f.id]));
    assert.equal((await t.post('/api/tables/errors/rows', { id: 'r-1', values: { title: 'one' } })).status, 201);
  });
  after(() => t.close());

  it('a row id that exists: 409 row_exists, naming the id when one row was written', async () => {
    const now = new Date().toISOString();
    const row = { id: 'r-1', created_at: now, updated_at: now, created_by: t.ownerId, updated_by: t.ownerId };
    const err = await failure(t.database.db.insertInto(physicalTable(tableId)).values(row).execute());

    const one = classify(err, { kind: 'row', id: 'r-1' });
    assert.ok(one instanceof ServiceError);
    assert.equal(one.code, 'row_exists');
    assert.equal(statusOf(one.code), 409);
    assert.match(one.message, /a row with id r-1 already exists/);

    const several = classify(err, { kind: 'rows' });
    assert.equal(several?.code, 'row_exists');
    assert.equal(several && statusOf(several.code), 409);
    // Where the caller did not say what it wrote, a unique violation is a fault, not a 409.
    assert.equal(classify(err), undefined);
    assert.equal(classifyDatabaseError(err, t.database.dialect), 'unique_violation');
  });

  it("another item's unique value: 409 unique_value, naming the column, never SQL", async () => {
    const member = await t.post('/api/members', { name: 'Ada', email: 'ada@example.com' });
    assert.equal(member.status, 201, member.text);
    const now = new Date().toISOString();
    const copy = { id: 'm-2', name: 'Ada again', email: 'ada@example.com', createdAt: now, updatedAt: now, createdBy: t.ownerId, updatedBy: t.ownerId };
    const err = await failure(t.database.db.insertInto('rh_members').values(copy).execute());

    const known = classify(err, { kind: 'item', label: 'member' });
    assert.equal(known?.code, 'unique_value');
    assert.equal(known && statusOf(known.code), 409);
    assert.equal(known?.message, 'another member already has this email');
  });

  it("a table or field removed while the request ran: 409 schema_changed; another table's absence is a fault", async () => {
    // Another request removes the field `note`; a statement planned before names its column.
    const kept = await t.put(`/api/tables/${tableId}`, { fields: [{ id: fieldIds.title }] });
    assert.equal(kept.status, 200, kept.text);
    const column = physicalColumn(fieldIds.note);
    const gone = await failure(t.database.db.selectFrom(physicalTable(tableId)).select(column).execute());
    const known = classify(gone);
    assert.equal(classifyDatabaseError(gone, t.database.dialect), 'schema_changed');
    assert.equal(known?.code, 'schema_changed');
    assert.equal(known && statusOf(known.code), 409);
    assert.equal(classify(gone, { kind: 'row', id: 'r-1' })?.code, 'schema_changed');
    // An insert or an update naming it (SQLite words an insert's refusal differently).
    const inserted = await failure(t.database.db.insertInto(physicalTable(tableId)).values({ id: 'r-2', [column]: 'n' }).execute());
    assert.equal(classify(inserted)?.code, 'schema_changed', String(inserted));
    const updated = await failure(t.database.db.updateTable(physicalTable(tableId)).set({ [column]: 'n' }).execute());
    assert.equal(classify(updated)?.code, 'schema_changed', String(updated));

    // Only user tables and fields change under a running request: a metadata table missing is a fault.
    const metadata = await failure(sql`select * from rh_no_such_table`.execute(t.database.db));
    assert.equal(classify(metadata), undefined);
    assert.equal(classifyDatabaseError(metadata, t.database.dialect), undefined);

    // The whole table deleted meanwhile.
    assert.equal((await t.delete(`/api/tables/${tableId}`)).status, 200);
    const dropped = await failure(t.database.db.selectFrom(physicalTable(tableId)).select('id').execute());
    assert.equal(classify(dropped)?.code, 'schema_changed');
  });

  it("the database's limit of columns: 400 too_many_columns", async () => {
    // SQLite allows 2000 columns, PostgreSQL 1600.
    const columns = Array.from({ length: 2001 }, (_, i) => `c${i} integer`).join(', ');
    const err = await failure(sql.raw(`create table wide (${columns})`).execute(t.database.db));
    const known = classify(err);
    assert.equal(classifyDatabaseError(err, t.database.dialect), 'too_many_columns');
    assert.equal(known?.code, 'too_many_columns');
    assert.equal(known && statusOf(known.code), 400);
  });

  it('an ServiceError is its own answer, and its code stays out of the body (CONTRACT §3)', () => {
    const err = new ServiceError('in_use', 'member m is the owner and cannot be deleted');
    assert.equal(classify(err), err);
    assert.equal(classifyDatabaseError(err, t.database.dialect), undefined);
    const placed = err.within([2], { index: 2 });
    assert.equal(placed.code, 'in_use');
    assert.equal(statusOf(placed.code), 409);
    // Placing an error adds to its path and never edits its message: the body renders the path.
    assert.deepEqual(placed.path, [2]);
    assert.equal(placed.message, 'member m is the owner and cannot be deleted');
    assert.deepEqual(serviceErrorBody(placed), { statusCode: 409, error: 'Conflict', message: '[2]: member m is the owner and cannot be deleted', index: 2 });
    const deeper = placed.within(['data', 3]);
    assert.deepEqual(deeper.path, ['data', 3, 2]);
    assert.equal(serviceErrorBody(deeper).message, 'data[3][2]: member m is the owner and cannot be deleted');
    assert.equal(serviceErrorBody(err.within(['data', 3, 'values', 'price'])).message, 'data[3].values.price: member m is the owner and cannot be deleted');
  });
});
