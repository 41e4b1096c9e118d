import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { isUuid } from '../../domain/codes.ts';
import { type ErrorDetail, ServiceError } from '../../domain/errors.ts';
import type { FieldDef } from '../../domain/field-types/field-type.ts';
import { type LinkOptions, edgeOwner, edgesOf, isLinkField, decodeLink, linkIds, linkOptions } from '../../domain/field-types/link.ts';
import { fieldColumn, tableName } from '../../domain/row-columns.ts';
import { type Db, beforeCommit } from '../database.ts';
import type { Dialect } from '../dialect.ts';
import type { MetaDb } from '../meta-schema.ts';
import type { WriteContext } from '../resources/resource-spec.ts';
import { loadFields, loadIncomingLinks } from '../table-catalog.ts';

/**
 * Link fields in table definitions (CONTRACT §11): their options checked and stored in their
 * normal form (`table` as an id), the pair's other field made or removed with its partner, the
 * edge tables created and dropped, and the versions of the tables a link points at moved (their
 * definitions list the links to them: TableDef.incoming).
 */

/** What FieldChanges (user-tables.ts) says of a field list, as far as links need it. */
export interface LinkFieldChanges {
  fields: FieldDef[];
  added: FieldDef[];
  removed: FieldDef[];
}

export interface LinkFieldPlan {
  problems: ErrorDetail[];
  /** Run after the table's own fields are saved and its columns changed. */
  apply(tx: Db, ctx: WriteContext): Promise<void>;
}

/** An edge table: the links of one one-way link field or pair, indexed both ways (docs/indexes.md). */
async function createEdges(tx: Db, dialect: Dialect, field: FieldDef): Promise<void> {
  const { table } = edgesOf(field);
  const text = sql.raw(dialect.columnType('text'));
  await sql`create table ${sql.table(table)} (src ${text} not null, dst ${text} not null, primary key (src, dst)) ${sql.raw(dialect.links.edgeTableOptions)}`.execute(tx);
  await sql`create index ${sql.id(`${table}_dst`)} on ${sql.table(table)} (dst, src)`.execute(tx);
}

async function dropEdges(tx: Db, field: FieldDef): Promise<void> {
  await tx.schema.dropTable(edgesOf(field).table).ifExists().execute();
}

async function bumpVersion(tx: MetaDb, tableId: string): Promise<void> {
  await tx.updateTable('rh_tables').set({ version: sql`${sql.ref('version')} + 1` }).where('id', '=', tableId).execute();
}

/** Adds a field at the end of another table's fields (the other field of a new pair). */
async function addField(tx: Db, dialect: Dialect, tableId: string, field: FieldDef, ctx: WriteContext): Promise<void> {
  const meta = tx as MetaDb;
  const last = await meta.selectFrom('rh_fields').select(sql<number>`max(position)`.as('p')).where('tableId', '=', tableId).executeTakeFirst();
  await meta
    .insertInto('rh_fields')
    .values({
      id: field.id,
      tableId,
      position: Number(last?.p ?? -1) + 1,
      code: field.code,
      name: field.name,
      type: field.type,
      required: dialect.encodeBoolean(false),
      options: dialect.encodeJson(field.options),
      createdAt: ctx.now,
      createdBy: ctx.memberId,
      updatedAt: ctx.now,
      updatedBy: ctx.memberId,
    })
    .execute();
  await tx.schema.alterTable(tableName(tableId)).addColumn(fieldColumn(field.id), sql.raw(dialect.columnType('json'))).execute();
  await bumpVersion(meta, tableId);
}

/** Removes a field of another table (the other field of a pair whose field was removed). */
async function removeField(tx: Db, tableId: string, fieldId: string): Promise<void> {
  const meta = tx as MetaDb;
  const gone = await meta.deleteFrom('rh_fields').where('id', '=', fieldId).executeTakeFirst();
  if (Number(gone.numDeletedRows) === 0) return;
  await tx.schema.alterTable(tableName(tableId)).dropColumn(fieldColumn(fieldId)).execute();
  await bumpVersion(meta, tableId);
}

/** The id of the table `ref` names (id or code), or undefined. */
async function resolveTable(tx: MetaDb, ref: string): Promise<string | undefined> {
  const row = await tx
    .selectFrom('rh_tables')
    .select('id')
    .where(isUuid(ref) ? 'id' : 'code', '=', isUuid(ref) ? ref.toLowerCase() : ref)
    .executeTakeFirst();
  return row?.id;
}

/** A row holding more than one link in the field, if any. */
async function rowWithSeveral(tx: Db, field: FieldDef): Promise<string | undefined> {
  const { table, mine } = edgesOf(field);
  const row = await tx.selectFrom(table).select(mine).groupBy(mine).having(sql`count(*)`, '>', 1).limit(1).executeTakeFirst();
  return row?.[mine] as string | undefined;
}

/** A field's values rewritten between the single form (an id) and the multiple form (an array). */
async function convertValues(tx: Db, dialect: Dialect, tableId: string, field: FieldDef, multiple: boolean): Promise<void> {
  const column = fieldColumn(field.id);
  const physical = tableName(tableId);
  let after = '';
  for (;;) {
    const rows = await tx.selectFrom(physical).select(['id', column]).where(column, 'is not', null).where('id', '>', after).orderBy('id').limit(500).execute();
    if (rows.length === 0) return;
    for (const row of rows) {
      const ids = linkIds(decodeLink(row[column], dialect));
      const value = multiple ? ids : (ids[0] ?? null);
      await tx.updateTable(physical).set({ [column]: value === null ? null : dialect.encodeJson(value) }).where('id', '=', row.id).execute();
    }
    after = rows[rows.length - 1].id as string;
  }
}

/**
 * Checks the link fields of a table's new field list against the tables they name and says what
 * saving it does besides the table's own fields. A new pair whose other field is on the table
 * itself is added to `changes`; removing one field of such a pair removes the other from it.
 */
export async function planLinkFields(
  tx: Db,
  dialect: Dialect,
  table: { id: string; code: string | null },
  existing: FieldDef[],
  changes: LinkFieldChanges,
  index: ReadonlyMap<string, number>,
): Promise<LinkFieldPlan> {
  const meta = tx as MetaDb;
  const problems: ErrorDetail[] = [];
  const before = new Map(existing.map((f) => [f.id, f]));
  const steps: ((tx: Db, ctx: WriteContext) => Promise<void>)[] = [];
  /** Tables other than this one whose incoming links change. */
  const touched = new Set<string>();
  const codesOf = new Map<string, Set<string>>();
  const otherCodes = async (tableId: string) => {
    let codes = codesOf.get(tableId);
    if (!codes) {
      codes = new Set(((await loadFields(meta, dialect, [tableId])).get(tableId) ?? []).map((f) => f.code));
      codesOf.set(tableId, codes);
    }
    return codes;
  };

  // Removing one field of a pair removes the other: on this table, from the list being saved.
  for (const f of [...changes.removed]) {
    if (!isLinkField(f)) continue;
    const partner = linkOptions(f).inverseField;
    const kept = changes.fields.find((k) => k.id === partner);
    if (kept) {
      changes.fields.splice(changes.fields.indexOf(kept), 1);
      changes.removed.push(before.get(kept.id) ?? kept);
    }
  }
  const dropped = new Set<string>();
  for (const f of changes.removed) {
    if (!isLinkField(f)) continue;
    const o = linkOptions(f);
    if (o.table !== table.id) touched.add(o.table);
    const owner = edgeOwner(f);
    if (!dropped.has(owner)) {
      dropped.add(owner);
      steps.push((t) => dropEdges(t, f));
    }
    if (o.inverseField !== undefined && o.table !== table.id) {
      const partner = o.inverseField;
      steps.push((t) => removeField(t, o.table, partner));
    }
  }

  const ownCodes = new Set(changes.fields.map((f) => f.code));
  for (const f of [...changes.fields]) {
    if (!isLinkField(f)) continue;
    const path = `fields[${index.get(f.id)}]`;
    const old = before.get(f.id);
    if (f.required) problems.push({ path: `${path}.required`, message: 'a link field cannot be required (its links go when the rows they name are deleted)' });
    const given = f.options as Record<string, unknown>;
    const ref = given.table as string;
    const target = ref === table.id || (table.code !== null && ref === table.code) ? table.id : await resolveTable(meta, ref);
    if (target === undefined) {
      problems.push({ path: `${path}.options.table`, message: `no table ${ref}` });
      continue;
    }
    const asked = linkOptions(f);
    const normal: LinkOptions = { table: target, multiple: asked.multiple, onDelete: asked.onDelete };
    if (old) {
      const was = linkOptions(old);
      if (target !== was.table) problems.push({ path: `${path}.options.table`, message: `cannot change the table a link field points at (${was.table}); add a new field instead` });
      if (asked.inverse !== undefined) problems.push({ path: `${path}.options.inverse`, message: 'can only be given when the link field is added' });
      if (given.inverseField !== undefined && given.inverseField !== was.inverseField) {
        problems.push({ path: `${path}.options.inverseField`, message: `cannot change: it names the other field of the pair (${was.inverseField ?? 'none'})` });
      }
      if (was.inverseField !== undefined) normal.inverseField = was.inverseField;
      if (was.multiple && !normal.multiple) {
        const row = await rowWithSeveral(tx, old);
        if (row !== undefined) problems.push({ path: `${path}.options.multiple`, message: `cannot become false: row ${row} holds more than one link` });
      }
      if (was.multiple !== normal.multiple) {
        const field = f;
        steps.push((t) => convertValues(t, dialect, table.id, field, normal.multiple));
      }
      if ((was.multiple !== normal.multiple || was.onDelete !== normal.onDelete) && target !== table.id) touched.add(target);
    } else {
      if (given.inverseField !== undefined) problems.push({ path: `${path}.options.inverseField`, message: 'is set by the service: use inverse to make a pair' });
      if (target !== table.id) touched.add(target);
      const inverse = asked.inverse;
      let partner: FieldDef | undefined;
      if (inverse !== undefined) {
        const codes = target === table.id ? ownCodes : await otherCodes(target);
        if (codes.has(inverse.code)) problems.push({ path: `${path}.options.inverse.code`, message: `${inverse.code} is already a field of table ${ref}` });
        codes.add(inverse.code);
        partner = {
          id: randomUUID(),
          code: inverse.code,
          name: inverse.name ?? inverse.code,
          type: 'link',
          required: false,
          options: { table: table.id, multiple: inverse.multiple ?? true, onDelete: 'unlink', inverseField: f.id },
        };
        normal.inverseField = partner.id;
      }
      const field = f;
      field.options = { ...normal };
      if (partner && target === table.id) {
        changes.fields.push(partner);
        changes.added.push(partner);
      } else if (partner) {
        const other = partner;
        steps.push((t, ctx) => addField(t, dialect, target, other, ctx));
      }
      steps.push((t) => createEdges(t, dialect, field));
      continue;
    }
    f.options = { ...normal };
  }
  return {
    problems,
    async apply(t, ctx) {
      for (const step of steps) await step(t, ctx);
      for (const id of touched) await bumpVersion(t as MetaDb, id);
    },
  };
}

/**
 * Before a table is deleted: its link fields' edges are dropped and the other fields of its pairs
 * removed. A one-way link field of another table that still points at it when the transaction
 * commits refuses the deletion (409 naming those fields): deleting that table too, in the same
 * `delete-many`, or removing the field first, lets it go.
 */
export async function deleteTableLinks(tx: Db, dialect: Dialect, tableId: string): Promise<void> {
  const meta = tx as MetaDb;
  const own = (await loadFields(meta, dialect, [tableId])).get(tableId) ?? [];
  // Its code, read now: by the commit its row is gone.
  const name = (await meta.selectFrom('rh_tables').select('code').where('id', '=', tableId).executeTakeFirst())?.code ?? tableId;
  const dropped = new Set<string>();
  for (const f of own.filter(isLinkField)) {
    const o = linkOptions(f);
    if (!dropped.has(edgeOwner(f))) {
      dropped.add(edgeOwner(f));
      await dropEdges(tx, f);
    }
    if (o.table !== tableId) {
      if (o.inverseField !== undefined) await removeField(tx, o.table, o.inverseField);
      else await bumpVersion(meta, o.table);
    }
  }
  beforeCommit(tx, async () => {
    const blocking = (await loadIncomingLinks(meta, dialect, tableId)).filter((l) => l.tableId !== tableId);
    if (blocking.length === 0) return;
    // Tables named as users know them: by code where they have one (as the restrict 409 does).
    const ids = blocking.map((l) => l.tableId);
    const codes = new Map((await meta.selectFrom('rh_tables').select(['id', 'code']).where('id', 'in', ids).execute()).map((r) => [r.id, r.code ?? r.id]));
    const nameOf = (id: string) => codes.get(id) ?? id;
    const names = blocking.map((l) => `${l.field.code} of table ${nameOf(l.tableId)}`).join(', ');
    throw new ServiceError(
      'in_use',
      `table ${name} is the target of link fields ${names}; remove them first`,
      blocking.map((l) => ({ path: `${nameOf(l.tableId)}.${l.field.code}`, message: `field ${l.field.code} of table ${nameOf(l.tableId)} (${l.tableId}) links to this table` })),
    );
  });
}
