import { isDate } from '../dates.ts';
import { type FieldType, ORDER_OPS, fail, ok, textColumn } from './field-type.ts';

export const dateType: FieldType = {
  name: 'date',
  column: 'date',
  optionsSchema: { type: 'object', additionalProperties: false },
  parse: (value) =>
    typeof value === 'string' && isDate(value) ? ok(value) : fail('must be a calendar date as YYYY-MM-DD'),
  ...textColumn,
  plainText: true,
  filterOps: ORDER_OPS,
  sortable: true,
  valueSchema: () => ({ type: 'string', format: 'date' }),
};
