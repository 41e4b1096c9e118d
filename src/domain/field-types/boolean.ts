import { type FieldType, describe, fail, ok } from './field-type.ts';

export const booleanType: FieldType = {
  name: 'boolean',
  column: 'boolean',
  optionsSchema: { type: 'object', additionalProperties: false },
  parse: (value) => (typeof value === 'boolean' ? ok(value) : fail(`must be true or false, not ${describe(value)}`)),
  toDb: (value, codec) => codec.encodeBoolean(value as boolean),
  fromDb: (raw, codec) => codec.decodeBoolean(raw),
  toText: (value) => (value ? 'true' : 'false'),
  plainText: true,
  fromText: (text) => (text === 'true' ? true : text === 'false' ? false : text),
  filterOps: ['_eq'],
  sortable: true,
  valueSchema: () => ({ type: 'boolean' }),
};
