import { normaliseDateTime } from '../dates.ts';
import { type ErrorDetail, badRequest, invalid } from '../errors.ts';
import { isObject } from '../json.ts';
import { schemaDetails, schemaValidator, type Validator } from '../json-schema.ts';
import type { AttrType } from '../resource-query.ts';
import { UNSTORABLE_TEXT, unstorableTextAt } from '../storable-text.ts';

/**
 * The bodies of the generic resource routes (CONTRACT §9), checked against the resource's
 * attributes into ResourceInput values: the store (store/resources/resource-store.ts) writes only
 * those.
 */

/** At most this many items in one create-many, update-many or delete-many. */
export const MAX_MANY = 1000;

export type BodyMode = 'create' | 'update';

type Attrs = Record<string, unknown>;

declare const accepted: unique symbol;
/** A body's attribute values, accepted by the resource's rules (JSON Schema, then its own checks). */
export type ResourceInput = Attrs & { readonly [accepted]: true };

/** What the checks need of a resource's spec (a ResourceSpec is one). */
export interface ResourceBodyRules {
  /** How one item is named in messages. */
  label: string;
  attrs: Record<string, { type: AttrType; schema: Record<string, unknown>; nullable?: boolean; create?: 'required' | 'optional' | 'no'; update?: boolean }>;
  hooks?: {
    /** Checks beyond JSON Schema; paths relative to the item. Runs on bodies that failed the schema too. */
    check?(input: Attrs, mode: BodyMode): ErrorDetail[];
  };
}

/** JSON Schema of a create or update body, from the attribute specs (also the OpenAPI document's). */
export function bodySchema(spec: ResourceBodyRules, mode: BodyMode): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const [name, attr] of Object.entries(spec.attrs)) {
    const creatable = (attr.create ?? 'optional') !== 'no';
    const writable = mode === 'create' ? creatable : (attr.update ?? creatable);
    if (!writable) continue;
    properties[name] = attr.nullable ? { anyOf: [attr.schema, { type: 'null' }] } : attr.schema;
    if (mode === 'create' && attr.create === 'required') required.push(name);
  }
  if (mode === 'update') properties.id = { type: 'string' };
  return { type: 'object', properties, required, additionalProperties: false };
}

/** The one-item body of POST and PUT. */
export function objectBody(body: unknown): Attrs {
  if (!isObject(body)) throw badRequest('The body must be a JSON object');
  return body;
}

function arrayBody(body: unknown, of: string): unknown[] {
  if (!Array.isArray(body)) throw badRequest(`The body must be a JSON array of ${of}`);
  if (body.length > MAX_MANY) throw badRequest(`At most ${MAX_MANY} items per request, got ${body.length}`);
  return body;
}

const join = (prefix: string, path: string) => (prefix && path ? `${prefix}.${path}` : prefix || path);

/** Whether two details' paths (relative to the item) are about one place: the same, or one inside the other (`rateLimit` and `rateLimit.requests`). */
const samePlace = (a: string, b: string) => a === b || a.startsWith(`${b}.`) || a.startsWith(`${b}[`) || b.startsWith(`${a}.`) || b.startsWith(`${a}[`);

/** One resource's body checks, its JSON Schemas compiled once. */
export class ResourceBodies {
  private readonly validators: Record<BodyMode, Validator>;

  constructor(private readonly rules: ResourceBodyRules) {
    this.validators = { create: schemaValidator(bodySchema(rules, 'create')), update: schemaValidator(bodySchema(rules, 'update')) };
  }

  /** POST /api/<name>. */
  create(body: unknown): ResourceInput {
    return this.validate([objectBody(body)], 'create', false)[0];
  }

  /** PUT /api/<name>/{id}: `body` (objectBody's) may repeat the path's id, but name no other. */
  update(body: Attrs, id: string): ResourceInput {
    if (body.id !== undefined && body.id !== id) {
      // Only a string is named: String() of a deeply nested array recurses past the stack.
      throw badRequest(typeof body.id === 'string' ? `id: the body names ${body.id} but the path names ${id}` : `id: must be ${id}, the id the path names`);
    }
    return this.validate([{ ...body, id }], 'update', false)[0];
  }

  /** POST /api/<name>/create-many. */
  createMany(body: unknown): ResourceInput[] {
    return this.validate(arrayBody(body, 'objects'), 'create', true);
  }

  /** PUT /api/<name>/update-many: each item names its id. */
  updateMany(body: unknown): ResourceInput[] {
    const items = arrayBody(body, 'objects with an id');
    const noId = items.flatMap((item, i) => (isObject(item) && typeof item.id === 'string' ? [] : [{ path: `[${i}].id`, message: 'each item must be an object with a string id' }]));
    if (noId.length > 0) throw invalid(noId, 'Invalid update-many');
    return this.validate(items, 'update', true);
  }

  /** DELETE /api/<name>/delete-many: ids. */
  deleteMany(body: unknown): string[] {
    const ids = arrayBody(body, 'ids');
    const notIds = ids.flatMap((id, i) => (typeof id === 'string' && id !== '' ? [] : [{ path: `[${i}]`, message: 'each item must be an id string' }]));
    if (notIds.length > 0) throw invalid(notIds, 'Invalid delete-many');
    return ids as string[];
  }

  /** Validates every item first, reporting every problem of the request at once. */
  private validate(inputs: unknown[], mode: BodyMode, many: boolean): ResourceInput[] {
    const details: ErrorDetail[] = [];
    inputs.forEach((input, i) => {
      const prefix = many ? `[${i}]` : '';
      const validator = this.validators[mode];
      if (!validator(input)) {
        // The resource's own checks still run, so a request hears of every problem at once. They
        // say more of an attribute than the schema does ("unknown scope", not "must be null; must
        // match a schema in anyOf"): of a place they speak of, the schema's words are left out (a
        // field's unknown type stays beside another field's repeated code).
        const own = isObject(input) ? (this.rules.hooks?.check?.(input, mode) ?? []) : [];
        for (const d of schemaDetails(validator.errors)) if (!own.some((o) => samePlace(o.path, d.path))) details.push({ path: join(prefix, d.path), message: d.message });
        for (const d of own) details.push({ path: join(prefix, d.path), message: d.message });
        return;
      }
      const item = input as Attrs;
      for (const [name, v] of Object.entries(item)) {
        const at = unstorableTextAt(v, name);
        if (at !== null) details.push({ path: join(prefix, at), message: UNSTORABLE_TEXT });
      }
      for (const [name, attr] of Object.entries(this.rules.attrs)) {
        if (attr.type === 'timestamp' && typeof item[name] === 'string' && normaliseDateTime(item[name] as string) === null) {
          details.push({ path: join(prefix, name), message: 'must be an ISO 8601 date-time with an offset' });
        }
      }
      for (const d of this.rules.hooks?.check?.(item, mode) ?? []) details.push({ path: join(prefix, d.path), message: d.message });
    });
    if (details.length > 0) throw invalid(details, `Invalid ${this.rules.label}`);
    return inputs as ResourceInput[];
  }
}
