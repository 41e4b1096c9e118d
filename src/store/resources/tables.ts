import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { FIELD_TYPE_NAMES, type FieldDef } from '../../domain/field-types/field-type.ts';
import { fieldOptionsSchema, fieldType, isFieldTypeName, isIndexed } from '../../domain/field-types/registry.ts';
import { schemaDetails, schemaValidator, type Validator } from '../../domain/json-schema.ts';
import { type ErrorDetail, invalid } from '../../domain/errors.ts';
import type { Db } from '../database.ts';
import { isFileField } from '../../domain/field-types/file.ts';
import { isLinkField } from '../../domain/field-types/link.ts';
import type { MetaDb } from '../meta-schema.ts';
import type { Dialect } from '../dialect.ts';
import { FIELD_CODE, RESERVED_FIELD_CODES, TABLE_CODE, isUuid } from '../../domain/codes.ts';
import { loadFields } from '../table-catalog.ts';
import { type FieldChanges, applyFieldChanges, createUserTable, dropUserTable, hasNulls, hasRows, physicalTable } from '../user-tables.ts';
import { deleteTableLinks, planLinkFields } from '../links/link-schema.ts';
import { AUDIT_RELATIONS, type Attrs, type ResourceSpec, type WriteContext } from './resource-spec.ts';

/** Table definitions (CONTRACT §4): metadata rows plus the DDL of the real table, in one transaction. */

const MAX_FIELDS = 500;

interface FieldInput {
  id?: string;
  code?: string;
  name?: string;
  type?: string;
  required?: boolean;
  options?: Record<string, unknown>;
}

const fieldSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    code: { type: 'string', pattern: FIELD_CODE },
    name: { type: 'string', minLength: 1, maxLength: 255 },
    type: { type: 'string', enum: [...FIELD_TYPE_NAMES] },
    required: { type: 'boolean' },
    options: { type: 'object' },
  },
  additionalProperties: false,
};

const optionValidators = new Map<string, Validator>(
  FIELD_TYPE_NAMES.map((name) => [name, schemaValidator(fieldOptionsSchema(name))]),
);

/** Problems of one field definition that need no database; `path` is like `fields[2]`. */
function checkField(f: FieldInput, path: string, creating: boolean): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  if (creating && f.code === undefined) problems.push({ path: `${path}.code`, message: 'is required' });
  if (creating && f.type === undefined) problems.push({ path: `${path}.type`, message: 'is required' });
  if (f.code !== undefined && RESERVED_FIELD_CODES.includes(f.code)) {
    problems.push({ path: `${path}.code`, message: `${f.code} is a system column and cannot be a field code` });
  }
  return problems;
}

function checkOptions(f: FieldDef, path: string): ErrorDetail[] {
  const validate = optionValidators.get(f.type) as Validator;
  if (!validate(f.options)) return schemaDetails(validate.errors, `${path}.options`);
  return (fieldType(f.type).checkOptions?.(f.options) ?? []).map((message) => ({ path: `${path}.options`, message }));
}

interface FieldPlan {
  changes: FieldChanges;
  /** Every problem of the list; `changes` then holds only the fields that could be read. */
  problems: ErrorDetail[];
  /** Field id → its index in the request's list, for paths. */
  index: Map<string, number>;
}

/** Checks a whole `fields` list against the table's current fields and says what changes. */
/** An entry the review can read: what the field schema lets through, at least in kind. */
function wellFormed(input: unknown): input is FieldInput {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return false;
  const f = input as Record<string, unknown>;
  const optional = (v: unknown, kind: string) => v === undefined || typeof v === kind;
  return (
    optional(f.id, 'string') && optional(f.code, 'string') && optional(f.name, 'string') && optional(f.required, 'boolean') &&
    (f.type === undefined || isFieldTypeName(f.type)) &&
    (f.options === undefined || (typeof f.options === 'object' && f.options !== null && !Array.isArray(f.options)))
  );
}

function reviewFields(existing: FieldDef[], inputs: FieldInput[]): FieldPlan {
  const problems: ErrorDetail[] = [];
  const index = new Map<string, number>();
  const byId = new Map(existing.map((f) => [f.id, f]));
  const fields: FieldDef[] = [];
  const seenCodes = new Map<string, number>();
  const seenIds = new Set<string>();
  inputs.forEach((input, i) => {
    const path = `fields[${i}]`;
    // An entry of the wrong shape is reported by the schema; the others are still reviewed.
    if (!wellFormed(input)) return;
    const before = input.id === undefined ? undefined : byId.get(input.id);
    if (input.id !== undefined && !before) {
      problems.push({ path: `${path}.id`, message: `no field ${input.id} in this table; leave id out to add a field` });
      return;
    }
    if (input.id !== undefined && seenIds.has(input.id)) {
      problems.push({ path: `${path}.id`, message: 'the same field appears twice' });
      return;
    }
    if (input.id !== undefined) seenIds.add(input.id);
    problems.push(...checkField(input, path, before === undefined));
    if (before && input.type !== undefined && input.type !== before.type) {
      problems.push({ path: `${path}.type`, message: `cannot change a field's type (${before.type} to ${input.type}); add a new field instead` });
    }
    const code = input.code ?? before?.code;
    const type = before?.type ?? (input.type as FieldDef['type'] | undefined);
    if (type === undefined) return;
    // A field without a code still has its options checked, so every problem is reported at once.
    const field: FieldDef = {
      id: before?.id ?? randomUUID(),
      code: code ?? '',
      name: input.name ?? before?.name ?? code ?? '',
      type,
      required: input.required ?? before?.required ?? false,
      options: input.options ?? before?.options ?? {},
    };
    problems.push(...checkOptions(field, path));
    if (code === undefined) return;
    const earlier = seenCodes.get(code);
    if (earlier !== undefined) problems.push({ path: `${path}.code`, message: `${code} is also the code of fields[${earlier}]` });
    seenCodes.set(code, i);
    index.set(field.id, i);
    fields.push(field);
  });
  const kept = new Set(fields.map((f) => f.id));
  const changes = {
    fields,
    added: fields.filter((f) => !byId.has(f.id)),
    removed: existing.filter((f) => !kept.has(f.id)),
    nullability: fields.filter((f) => f.required !== (byId.get(f.id)?.required ?? false)),
    reindexed: fields.filter((f) => byId.has(f.id) && isIndexed(f) !== isIndexed(byId.get(f.id) as FieldDef)),
  };
  return { changes, problems, index };
}

/** A table code of UUID shape would be taken for an id in every URL. */
function codeProblems(input: Attrs): ErrorDetail[] {
  const code = input.code;
  return typeof code === 'string' && isUuid(code)
    ? [{ path: 'code', message: 'must not look like a UUID: table references of that shape are ids' }]
    : [];
}

/** What would leave a required field empty: refused, so the table's data stays as it was. */
async function requiredProblems(tx: Db, tableId: string, plan: FieldPlan): Promise<ErrorDetail[]> {
  const { changes } = plan;
  const problems: ErrorDetail[] = [];
  for (const f of changes.nullability) {
    // A link field is never required, null or not: the link plan says so (planLinkFields).
    if (!f.required || isLinkField(f)) continue;
    const path = `fields[${plan.index.get(f.id)}].required`;
    const isNew = changes.added.includes(f);
    if (isNew ? await hasRows(tx, tableId) : await hasNulls(tx, tableId, f)) {
      problems.push({
        path,
        message: isNew
          ? `cannot add required field ${f.code} to a table that has rows: they would have no value`
          : `cannot make ${f.code} required while rows hold null in it`,
      });
    }
  }
  return problems;
}

/** Saves the new field list; `before` holds the ids of the fields the table had. */
async function saveFields(tx: MetaDb, dialect: Dialect, tableId: string, changes: FieldChanges, ctx: WriteContext, before: Set<string>): Promise<void> {
  if (changes.removed.length > 0) {
    await tx.deleteFrom('rh_fields').where('id', 'in', changes.removed.map((f) => f.id)).execute();
  }
  for (const [position, f] of changes.fields.entries()) {
    const columns = {
      position,
      code: f.code,
      name: f.name,
      required: dialect.encodeBoolean(f.required),
      options: dialect.encodeJson(f.options),
      updatedAt: ctx.now,
      updatedBy: ctx.memberId,
    };
    if (before.has(f.id)) {
      await tx.updateTable('rh_fields').set(columns).where('id', '=', f.id).execute();
    } else {
      await tx
        .insertInto('rh_fields')
        .values({ ...columns, id: f.id, tableId, type: f.type, createdAt: ctx.now, createdBy: ctx.memberId })
        .execute();
    }
  }
}

/** Codes are unique per table, and a new order may swap two: clear them before saving the new list. */
async function releaseCodes(tx: MetaDb, tableId: string): Promise<void> {
  await tx.updateTable('rh_fields').set({ code: sql`'~' || ${sql.ref('id')}` }).where('tableId', '=', tableId).execute();
}

/** What deleting a table or some of its fields asks of the rest: file attachments let go of their files, the change log records its rows' deletion. */
export interface TableDeletion {
  files?: { releaseTable(tx: Db, tableId: string, fieldIds?: string[]): Promise<void> };
  changes?: { tableDeleted(tx: Db, table: { id: string; physical: string }, ctx: WriteContext): Promise<void> };
}

export function tablesSpec(dialect: Dialect, { files, changes }: TableDeletion = {}): ResourceSpec {
  /**
   * Changes of one table take turns: the second waits here until the first commits, then reads the
   * fields as they are now (on PostgreSQL; SQLite runs one write transaction at a time anyway).
   */
  const lockTable = async (tx: MetaDb, tableId: string) => {
    if (dialect.lockRows) await tx.selectFrom('rh_tables').select('id').where('id', '=', tableId).forUpdate().execute();
  };
  return {
    name: 'tables',
    table: 'rh_tables',
    label: 'table',
    // A key limited to some tables sees only them (CONTRACT §12).
    tableRef: { column: 'id' },
    attrs: {
      code: { type: 'text', schema: { type: 'string', pattern: TABLE_CODE }, nullable: true, default: () => null },
      name: { type: 'text', schema: { type: 'string', minLength: 1, maxLength: 255 }, create: 'required' },
      description: { type: 'text', schema: { type: 'string', maxLength: 10_000 }, nullable: true, default: () => null },
      fields: { type: 'json', schema: { type: 'array', maxItems: MAX_FIELDS, items: fieldSchema }, virtual: true },
      version: { type: 'text', schema: { type: 'integer' }, create: 'no', update: false, hidden: true },
    },
    relations: AUDIT_RELATIONS,
    hooks: {
      async resolveId(db, ref) {
        if (isUuid(ref)) return ref.toLowerCase();
        const row = await db.selectFrom('rh_tables').select('id').where('code', '=', ref).executeTakeFirst();
        return row?.id;
      },
      check(input, mode) {
        // An update's fields can only be checked against the table's current ones: beforeUpdate does it.
        if (mode === 'update') return [];
        const fields = Array.isArray(input.fields) ? (input.fields as FieldInput[]) : [];
        return [...codeProblems(input), ...reviewFields([], fields).problems];
      },
      async beforeInsert(_tx, columns) {
        columns.version = 1;
      },
      async afterInsert(tx, item, input, ctx) {
        const plan = reviewFields([], (input.fields as FieldInput[] | undefined) ?? []);
        if (plan.problems.length > 0) throw invalid(plan.problems, 'Invalid table');
        const links = await planLinkFields(tx, dialect, { id: item.id, code: (item.code as string | null) ?? null }, [], plan.changes, plan.index);
        if (links.problems.length > 0) throw invalid(links.problems, 'Invalid table');
        await saveFields(tx, dialect, item.id, plan.changes, ctx, new Set());
        await createUserTable(tx, dialect, item.id, plan.changes.fields);
        await links.apply(tx, ctx);
      },
      async beforeUpdate(tx, before, changes, input, ctx) {
        changes.version = sql`${sql.ref('version')} + 1`;
        const problems = codeProblems(input);
        await lockTable(tx, before.id);
        if (input.fields !== undefined) {
          const tableId = before.id;
          const existing = (await loadFields(tx, dialect, [tableId])).get(tableId) ?? [];
          const plan = reviewFields(existing, input.fields as FieldInput[]);
          problems.push(...plan.problems, ...(await requiredProblems(tx, tableId, plan)));
          const links = problems.length === 0 ? await planLinkFields(tx, dialect, { id: tableId, code: (input.code as string | undefined) ?? (before.code as string | null) ?? null }, existing, plan.changes, plan.index) : null;
          if (links) problems.push(...links.problems);
          if (links && problems.length === 0) {
            await releaseCodes(tx, tableId);
            await saveFields(tx, dialect, tableId, plan.changes, ctx, new Set(existing.map((f) => f.id)));
            await applyFieldChanges(tx, dialect, tableId, plan.changes);
            await links.apply(tx, ctx);
            const removedFiles = plan.changes.removed.filter(isFileField).map((f) => f.id);
            if (removedFiles.length > 0) await files?.releaseTable(tx, tableId, removedFiles);
          }
        }
        if (problems.length > 0) throw invalid(problems, 'Invalid table');
      },
      async beforeDelete(tx, item, ctx) {
        await lockTable(tx, item.id);
        await deleteTableLinks(tx, dialect, item.id);
        await changes?.tableDeleted(tx, { id: item.id, physical: physicalTable(item.id) }, ctx);
        await tx.deleteFrom('rh_fields').where('tableId', '=', item.id).execute();
        await dropUserTable(tx, dialect, item.id);
        await files?.releaseTable(tx, item.id);
      },
      async decorate(db, items) {
        const fields = await loadFields(db, dialect, items.map((i) => i.id));
        for (const item of items) {
          item.fields = (fields.get(item.id) ?? []).map(({ id, code, name, type, required, options }) => ({
            id, code, name, type, required, options,
          }));
        }
      },
    },
  };
}
