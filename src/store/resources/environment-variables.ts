import { AUDIT_RELATIONS, type ResourceSpec } from './resource-spec.ts';

export const environmentVariables: ResourceSpec = {
  name: 'environment-variables',
  table: 'rh_environment_variables',
  label: 'environment variable',
  attrs: {
    name: { type: 'text', schema: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 255 }, create: 'required' },
    value: { type: 'text', schema: { type: 'string', maxLength: 1_000_000 }, create: 'required' },
    description: { type: 'text', schema: { type: 'string', maxLength: 10_000 }, nullable: true, default: () => null },
  },
  relations: AUDIT_RELATIONS,
};
