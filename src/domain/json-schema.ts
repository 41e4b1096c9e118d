import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { ErrorDetail } from './errors.ts';

/** The one JSON Schema validator: every problem of a value is reported, not just the first. */
const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });

/** Whether a value fits the schema; when not, `errors` says why. */
export interface Validator {
  (value: unknown): boolean;
  errors?: ErrorObject[] | null;
}

/**
 * A validator of the schema, compiled on its first use: compiling every resource's and field
 * type's schemas at start took 40 to 80 ms, for validators a run may never call.
 */
export function schemaValidator(schema: Record<string, unknown>): Validator {
  let compiled: ValidateFunction | undefined;
  const validate: Validator = (value) => {
    compiled ??= ajv.compile(schema);
    const valid = compiled(value) as boolean;
    validate.errors = compiled.errors;
    return valid;
  };
  return validate;
}

/** Ajv's errors as error details, with paths like `prefix.name` or `prefix[2].code`. */
export function schemaDetails(errors: ErrorObject[] | null | undefined, prefix = ''): ErrorDetail[] {
  return (errors ?? []).map((e) => {
    const segments = e.instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'additionalProperties') {
      segments.push(String(e.params.additionalProperty));
      message = 'is not a known property';
    } else if (e.keyword === 'required') {
      segments.push(String(e.params.missingProperty));
      message = 'is required';
    } else if (e.keyword === 'enum') {
      message = `must be one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    }
    const path = segments.reduce((p, s) => (/^\d+$/.test(s) ? `${p}[${s}]` : p ? `${p}.${s}` : s), prefix);
    return { path, message };
  });
}
