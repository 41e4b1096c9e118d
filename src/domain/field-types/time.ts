import { isTime } from '../dates.ts';
import { type FieldType, ORDER_OPS, fail, ok, textColumn } from './field-type.ts';

export const timeType: FieldType = {
  name: 'time',
  column: 'time',
  optionsSchema: { type: 'object', additionalProperties: false },
  parse: (value) => (typeof value === 'string' && isTime(value) ? ok(value) : fail('must be a time as HH:MM:SS')),
  ...textColumn,
  plainText: true,
  filterOps: ORDER_OPS,
  sortable: true,
  valueSchema: () => ({ type: 'string', pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]$' }),
};
