import { booleanType } from './boolean.ts';
import { dateTimeType } from './date-time.ts';
import { dateType } from './date.ts';
import { FIELD_TYPE_NAMES, type FieldDef, type FieldType, type FieldTypeName } from './field-type.ts';
import { fileType } from './file.ts';
import { linkType } from './link.ts';
import { listType } from './list.ts';
import { numberType } from './number.ts';
import { recordType } from './record.ts';
import { selectType } from './select.ts';
import { textType } from './text.ts';
import { timeType } from './time.ts';
import { yearMonthType } from './year-month.ts';

/** The one registry of field types. Adding a type means adding a module and a line here. */
const registry: Record<FieldTypeName, FieldType> = {
  text: textType,
  number: numberType,
  boolean: booleanType,
  dateTime: dateTimeType,
  date: dateType,
  time: timeType,
  yearMonth: yearMonthType,
  select: selectType,
  record: recordType,
  list: listType,
  file: fileType,
  link: linkType,
};

export function isFieldTypeName(name: unknown): name is FieldTypeName {
  return typeof name === 'string' && (FIELD_TYPE_NAMES as readonly string[]).includes(name);
}

export function fieldType(name: FieldTypeName): FieldType {
  return registry[name];
}

/**
 * JSON Schema of a field's `options`: the type's own, plus `indexed` for the types that can be
 * sort keys. An index makes sorts and range filters on the field fast on large tables and costs
 * every write of the table (see docs/indexes.md for the figures), so it is the field's choice.
 */
export function fieldOptionsSchema(name: FieldTypeName): Record<string, unknown> {
  const type = registry[name];
  if (!type.sortable) return type.optionsSchema;
  const own = type.optionsSchema as { properties?: Record<string, unknown> };
  return { ...own, properties: { ...own.properties, indexed: { type: 'boolean' } } };
}

/** Whether the field has an index of its own: only when asked for (`options.indexed`). */
export function isIndexed(field: FieldDef): boolean {
  return registry[field.type].sortable && field.options.indexed === true;
}

export { FIELD_TYPE_NAMES };

/** The value a field reads as where its column holds null (CONTRACT §11: an empty multiple link reads []). */
export function nullValueOf(field: FieldDef): unknown {
  const type = registry[field.type];
  return type.nullValue ? type.nullValue(field) : null;
}
