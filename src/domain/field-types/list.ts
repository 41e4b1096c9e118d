import { type FieldType, describe, fail, jsonColumn, jsonTextFromDb, ok } from './field-type.ts';

export const listType: FieldType = {
  name: 'list',
  column: 'json',
  optionsSchema: { type: 'object', additionalProperties: false },
  parse: (value) => (Array.isArray(value) ? ok(value) : fail(`must be an array, not ${describe(value)}`)),
  ...jsonColumn,
  textFromDb: jsonTextFromDb,
  jsonFromDb: jsonTextFromDb,
  // `_contains` on a list matches an element (CONTRACT §6).
  filterOps: ['_contains'],
  sortable: false,
  valueSchema: () => ({ type: 'array' }),
};
