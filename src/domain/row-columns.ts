import type { FieldDef, FieldType } from './field-types/field-type.ts';
import { fieldType } from './field-types/registry.ts';

/**
 * A column of a user table as filters and sorts see it: a system column or a field, with the
 * field type that decides its operators, sortability and encoding.
 */
export interface RowColumn {
  /** How the request names it: a system column name or a field code. */
  key: string;
  /** The physical column. */
  column: string;
  type: FieldType;
  field: FieldDef;
  /** System columns are never null. */
  system: boolean;
}

/** Anything that can resolve field codes: a table definition. */
export interface FieldLookup {
  id: string;
  fields: FieldDef[];
  fieldsByCode: Map<string, FieldDef>;
  /** The tables its link fields lead to, by id, as far as a filter may follow them (row-filter.ts); without it, filters cannot look through links. */
  linked?: ReadonlyMap<string, FieldLookup>;
}

const systemField = (code: string, type: FieldDef['type']): FieldDef => ({ id: code, code, name: code, type, required: true, options: {} });

/** System columns: API name → physical column and the type they compare as. */
export const SYSTEM_COLUMNS: Record<string, RowColumn> = Object.fromEntries(
  (
    [
      ['id', 'id', 'text'],
      ['createdAt', 'created_at', 'dateTime'],
      ['updatedAt', 'updated_at', 'dateTime'],
      ['createdBy', 'created_by', 'text'],
      ['updatedBy', 'updated_by', 'text'],
    ] as const
  ).map(([key, column, type]) => [key, { key, column, type: fieldType(type), field: systemField(key, type), system: true }]),
);

export const isSystemColumn = (key: string): boolean => Object.hasOwn(SYSTEM_COLUMNS, key);

/** Ids already written as hex: a bulk write names each field's column once per row. */
const hexOf = new Map<string, string>();

/** An id as it appears in physical names: its 32 hex digits. */
export function idHex(uuid: string): string {
  let hex = hexOf.get(uuid);
  if (hex === undefined) {
    hex = uuid.replace(/-/g, '').toLowerCase();
    // Ids of tables and fields, so few; bounded all the same.
    if (hexOf.size >= 100_000) hexOf.clear();
    hexOf.set(uuid, hex);
  }
  return hex;
}

/** The physical column of a field: from its id, so renaming a code touches only metadata. */
export const fieldColumn = (fieldId: string) => `f_${idHex(fieldId)}`;

/** The physical table of a user table, named from its id. */
export const tableName = (tableId: string) => `rows_${idHex(tableId)}`;

/** PostgreSQL: the sequence numbering a user table's change entries (store/change-log.ts). */
export const changeNumbers = (tableId: string) => `change_numbers_${idHex(tableId)}`;

/** The system columns in record order: API name and physical column. */
export const SYSTEM_ORDER = Object.values(SYSTEM_COLUMNS);

export function fieldTarget(field: FieldDef): RowColumn {
  return { key: field.code, column: fieldColumn(field.id), type: fieldType(field.type), field, system: false };
}
