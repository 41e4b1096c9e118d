import { type FieldType, ORDER_OPS, describe, fail, ok } from './field-type.ts';

export const numberType: FieldType = {
  name: 'number',
  column: 'real',
  optionsSchema: {
    type: 'object',
    properties: { min: { type: 'number' }, max: { type: 'number' } },
    additionalProperties: false,
  },
  checkOptions: (o) =>
    typeof o.min === 'number' && typeof o.max === 'number' && o.min > o.max ? ['min must not be greater than max'] : [],
  parse(value, field) {
    if (typeof value !== 'number' || !Number.isFinite(value)) return fail(`must be a finite number, not ${describe(value)}`);
    const { min, max } = field.options as { min?: number; max?: number };
    if (min !== undefined && value < min) return fail(`must be at least ${min}`);
    if (max !== undefined && value > max) return fail(`must be at most ${max}`);
    return ok(value);
  },
  toDb: (value) => value,
  fromDb: (raw) => Number(raw),
  toText: (value) => String(value),
  plainText: true,
  // As JavaScript writes numbers (toText): anything else stays text, which parse refuses.
  fromText: (text) => (/^-?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(text) ? Number(text) : text),
  filterOps: ORDER_OPS,
  sortable: true,
  valueSchema: (field) => ({
    type: 'number',
    ...(field.options.min !== undefined ? { minimum: field.options.min } : {}),
    ...(field.options.max !== undefined ? { maximum: field.options.max } : {}),
  }),
};
