import { isYearMonth } from '../dates.ts';
import { type FieldType, ORDER_OPS, fail, ok, textColumn } from './field-type.ts';

export const yearMonthType: FieldType = {
  name: 'yearMonth',
  column: 'text',
  optionsSchema: { type: 'object', additionalProperties: false },
  parse: (value) =>
    typeof value === 'string' && isYearMonth(value) ? ok(value) : fail('must be a year and month as YYYY-MM'),
  ...textColumn,
  plainText: true,
  filterOps: ORDER_OPS,
  sortable: true,
  valueSchema: () => ({ type: 'string', pattern: '^[0-9]{4}-(0[1-9]|1[0-2])$' }),
};
