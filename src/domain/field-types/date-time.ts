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
  // As written: seconds may be left out (09:30Z), which `format: date-time` (RFC 3339) would refuse.
  writeSchema: () => ({
    type: 'string',
    pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?([Zz]|[+-]\\d{2}:?\\d{2})$',
    description: 'An ISO 8601 date-time with an offset; seconds and fractions are optional (2024-05-01T09:30Z). Read back in UTC with milliseconds.',
  }),
};
