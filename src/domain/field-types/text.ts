import { type FieldType, TEXT_OPS, describe, fail, ok, textColumn } from './field-type.ts';

export const textType: FieldType = {
  name: 'text',
  column: 'text',
  optionsSchema: {
    type: 'object',
    properties: { maxLength: { type: 'integer', minimum: 1, maximum: 1_000_000 } },
    additionalProperties: false,
  },
  parse(value, field) {
    if (typeof value !== 'string') return fail(`must be a string, not ${describe(value)}`);
    const max = field.options.maxLength as number | undefined;
    if (max !== undefined && [...value].length > max) return fail(`must be at most ${max} characters`);
    return ok(value);
  },
  ...textColumn,
  filterOps: TEXT_OPS,
  sortable: true,
  valueSchema: (field) => ({
    type: 'string',
    ...(field.options.maxLength !== undefined ? { maxLength: field.options.maxLength } : {}),
  }),
};
