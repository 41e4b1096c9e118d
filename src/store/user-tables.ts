import { sql } from 'kysely';
import type { FieldDef } from '../domain/field-types/field-type.ts';
import { fieldType, isIndexed } from '../domain/field-types/registry.ts';
import { SYSTEM_ORDER, fieldColumn, idHex, tableName } from '../domain/row-columns.ts';
import type { Db } from './database.ts';
import type { ColumnKind, Dialect } from './dialect.ts';
import { indexKey } from './row-sql.ts';

/**
 * The real SQL table behind each user table: one typed column per field. Physical names come
 * from ids, never from user codes, so renaming a code touches only metadata and no user string
 * ever reaches SQL as an identifier.
 */

export { fieldColumn as physicalColumn, tableName as physicalTable } from '../domain/row-columns.ts';

/** System columns: API name → physical column. */
const SYSTEM = Object.fromEntries(SYSTEM_ORDER.map((c) => [c.key, c.column])) as Record<'id' | 'createdAt' | 'updatedAt' | 'createdBy' | 'updatedBy', string>;

interface IndexDef {
  name: string;
  column: string;
  kind: ColumnKind;
  /** A field's column, which may hold nulls (the system columns never do). */
  nullable: boolean;
}

const fieldIndex = (f: FieldDef): IndexDef => ({ name: `i_${idHex(f.id)}`, column: fieldColumn(f.id), kind: fieldType(f.type).column, nullable: true });

/** Indexes on (sort key, id): what keeps sorted filters and keyset pages fast as tables grow. */
function indexesOf(tableId: string, fields: FieldDef[]): IndexDef[] {
  const t = idHex(tableId);
  return [
    { name: `i_${t}_created`, column: SYSTEM.createdAt, kind: 'timestamp', nullable: false },
    { name: `i_${t}_updated`, column: SYSTEM.updatedAt, kind: 'timestamp', nullable: false },
    ...fields.filter(isIndexed).map(fieldIndex),
  ];
}

/**
 * A field's index holds nulls first, as SQLite always orders them: one index then serves `asc
 * nullsFirst` forwards and `desc nullsLast` backwards on both databases (row-sql.ts, orderBy).
 * (PostgreSQL's own place for them is last, which served `desc nullsLast` with a sort of the
 * whole table: 41 pages a second at 200,000 rows.)
 */
const nullsFirst = (dialect: Dialect, ix: IndexDef) => sql.raw(ix.nullable && !dialect.nullsFirstByDefault('asc') ? ' nulls first' : '');

async function createIndex(tx: Db, dialect: Dialect, tableId: string, ix: IndexDef): Promise<void> {
  await sql`create index ${sql.id(ix.name)} on ${sql.table(tableName(tableId))} (${indexKey(dialect, ix.column, ix.kind)}${nullsFirst(dialect, ix)}, ${sql.ref('id')})`.execute(tx);
}

async function createTable(tx: Db, dialect: Dialect, name: string, fields: FieldDef[]): Promise<void> {
  const ts = sql.raw(dialect.columnType('timestamp'));
  const text = sql.raw(dialect.columnType('text'));
  let builder = tx.schema
    .createTable(name)
    .addColumn('id', text, (c) => c.primaryKey())
    .addColumn(SYSTEM.createdAt, ts, (c) => c.notNull())
    .addColumn(SYSTEM.updatedAt, ts, (c) => c.notNull())
    .addColumn(SYSTEM.createdBy, text, (c) => c.notNull())
    .addColumn(SYSTEM.updatedBy, text, (c) => c.notNull());
  for (const f of fields) {
    builder = builder.addColumn(fieldColumn(f.id), sql.raw(dialect.columnType(fieldType(f.type).column)), (c) =>
      f.required ? c.notNull() : c,
    );
  }
  await builder.execute();
}

export async function createUserTable(tx: Db, dialect: Dialect, tableId: string, fields: FieldDef[]): Promise<void> {
  await createTable(tx, dialect, tableName(tableId), fields);
  for (const ix of indexesOf(tableId, fields)) await createIndex(tx, dialect, tableId, ix);
  await dialect.createChangeNumbers(tx, tableId);
}

export async function dropUserTable(tx: Db, dialect: Dialect, tableId: string): Promise<void> {
  await tx.schema.dropTable(tableName(tableId)).ifExists().execute();
  await dialect.dropChangeNumbers(tx, tableId);
}

export async function hasRows(tx: Db, tableId: string): Promise<boolean> {
  return (await tx.selectFrom(tableName(tableId)).select(sql.lit(1).as('one')).limit(1).executeTakeFirst()) !== undefined;
}

export async function hasNulls(tx: Db, tableId: string, field: FieldDef): Promise<boolean> {
  const row = await tx
    .selectFrom(tableName(tableId))
    .select(sql.lit(1).as('one'))
    .where(fieldColumn(field.id), 'is', null)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

export interface FieldChanges {
  /** The whole new list of fields, in order. */
  fields: FieldDef[];
  added: FieldDef[];
  removed: FieldDef[];
  /** Fields (in their new form) whose `required` differs from before; added required fields too. */
  nullability: FieldDef[];
  /** Fields kept (in their new form) whose `options.indexed` differs from before. */
  reindexed: FieldDef[];
}

/**
 * Applies field changes as DDL inside the caller's transaction. The caller has checked that no
 * field becoming required holds nulls. SQLite cannot change a column's NOT NULL, so there the
 * table is rebuilt with the new definition and its rows copied over.
 */
export async function applyFieldChanges(tx: Db, dialect: Dialect, tableId: string, c: FieldChanges): Promise<void> {
  const table = tableName(tableId);
  if (c.nullability.length > 0 && !dialect.canAlterNullability) {
    await rebuildTable(tx, dialect, tableId, c.fields);
    return;
  }
  for (const f of [...c.removed, ...c.reindexed.filter((r) => !isIndexed(r))]) {
    await tx.schema.dropIndex(fieldIndex(f).name).ifExists().execute();
  }
  for (const f of c.removed) await tx.schema.alterTable(table).dropColumn(fieldColumn(f.id)).execute();
  for (const f of c.added) {
    await tx.schema.alterTable(table).addColumn(fieldColumn(f.id), sql.raw(dialect.columnType(fieldType(f.type).column))).execute();
  }
  for (const f of [...c.added, ...c.reindexed].filter(isIndexed)) await createIndex(tx, dialect, tableId, fieldIndex(f));
  for (const f of c.nullability) {
    await tx.schema
      .alterTable(table)
      .alterColumn(fieldColumn(f.id), (col) => (f.required ? col.setNotNull() : col.dropNotNull()))
      .execute();
  }
}

async function rebuildTable(tx: Db, dialect: Dialect, tableId: string, fields: FieldDef[]): Promise<void> {
  const table = tableName(tableId);
  const next = `${table}_next`;
  await createTable(tx, dialect, next, fields);
  const existing = new Set(
    (await sql<{ name: string }>`select name from pragma_table_info(${table})`.execute(tx)).rows.map((r) => r.name),
  );
  const columns = [...Object.values(SYSTEM), ...fields.map((f) => fieldColumn(f.id))].filter((c) => existing.has(c));
  const list = sql.join(columns.map((c) => sql.ref(c)));
  await sql`insert into ${sql.table(next)} (${list}) select ${list} from ${sql.table(table)}`.execute(tx);
  await tx.schema.dropTable(table).execute();
  await tx.schema.alterTable(next).renameTo(table).execute();
  for (const ix of indexesOf(tableId, fields)) await createIndex(tx, dialect, tableId, ix);
}
