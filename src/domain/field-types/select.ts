import { type FieldType, TEXT_OPS, fail, ok, textColumn } from './field-type.ts';

const choicesOf = (options: Record<string, unknown>) => options.choices as string[];

export const selectType: FieldType = {
  name: 'select',
  column: 'text',
  optionsSchema: {
    type: 'object',
    properties: {
      choices: { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1, maxItems: 1000, uniqueItems: true },
    },
    required: ['choices'],
    additionalProperties: false,
  },
  parse(value, field) {
    const choices = choicesOf(field.options);
    if (typeof value !== 'string' || !choices.includes(value)) {
      return fail(`must be one of ${choices.map((c) => JSON.stringify(c)).join(', ')}`);
    }
    return ok(value);
  },
  ...textColumn,
  // A filter may name any text, not only a current choice (choices change; old values stay).
  comparisonType: 'text',
  filterOps: TEXT_OPS,
  sortable: true,
  valueSchema: (field) => ({ type: 'string', enum: choicesOf(field.options) }),
};
