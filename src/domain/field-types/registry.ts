import { booleanType } from './boolean.ts';
import { dateTimeType } from './date-time.ts';
import { dateType } from './date.ts';
import { FIELD_TYPE_NAMES, type FieldType, type FieldTypeName } from './field-type.ts';
import { fileType } from './file.ts';
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
};

export function isFieldTypeName(name: unknown): name is FieldTypeName {
  return typeof name === 'string' && (FIELD_TYPE_NAMES as readonly string[]).includes(name);
}

export function fieldType(name: FieldTypeName): FieldType {
  return registry[name];
}

export { FIELD_TYPE_NAMES };
