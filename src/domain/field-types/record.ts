import { type FieldType, describe, fail, jsonColumn, jsonTextFromDb, ok } from './field-type.ts';

export const recordType: FieldType = {
  name: 'record',
  column: 'json',
  optionsSchema: { type: 'object', additionalProperties: false },
  parse: (value) =>
    typeof value === 'object' && value !== null && !Array.isArray(value)
      ? ok(value)
      : fail(`must be an object, not ${describe(value)}`),
  ...jsonColumn,
  textFromDb: jsonTextFromDb,
  jsonFromDb: jsonTextFromDb,
  filterOps: [],
  sortable: false,
  // Any keys: openapi-typescript reads a bare object schema as one without keys (Record<string, never>).
  valueSchema: () => ({ type: 'object', additionalProperties: true }),
};
