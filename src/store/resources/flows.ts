import { AUDIT_RELATIONS, type ResourceSpec } from './resource-spec.ts';

export const flows: ResourceSpec = {
  name: 'flows',
  table: 'rh_flows',
  label: 'flow',
  attrs: {
    name: { type: 'text', schema: { type: 'string', minLength: 1, maxLength: 255 }, create: 'required' },
    description: { type: 'text', schema: { type: 'string', maxLength: 10_000 }, nullable: true, default: () => null },
    enabled: { type: 'boolean', schema: { type: 'boolean' }, default: () => false },
    definition: { type: 'json', schema: { type: 'object' }, default: () => ({}) },
  },
  relations: AUDIT_RELATIONS,
};
