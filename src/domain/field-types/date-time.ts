import { normaliseDateTime } from '../dates.ts';
import { type FieldType, ORDER_OPS, fail, ok, textColumn } from './field-type.ts';

export const dateTimeType: FieldType = {
  name: 'dateTime',
  column: 'timestamp',
  optionsSchema: { type: 'object', additionalProperties: false },
  parse(value) {
    const iso = typeof value === 'string' ? normaliseDateTime(value) : null;
    return iso === null ? fail('must be an ISO 8601 date-time with an offset, like 2024-05-01T09:30:00Z') : ok(iso);
  },
  ...textColumn,
  plainText: true,
  filterOps: ORDER_OPS,
  sortable: true,
  valueSchema: () => ({ type: 'string', format: 'date-time' }),
};
