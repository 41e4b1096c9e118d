import { type ErrorDetail, invalid } from './errors.ts';
import type { FieldDef } from './field-types/field-type.ts';
import { fieldType } from './field-types/registry.ts';
import { ROW_ID } from './codes.ts';
import type { TableDef } from './table.ts';
import { UNSTORABLE_TEXT, unstorableTextAt } from './storable-text.ts';
import { MAX_VALUE_DEPTH, isObject, tooDeepAt } from './json.ts';

/** Written row values, checked against their fields (CONTRACT §5). */


export interface RowValues {
  /** The fields written, with normalised values (null empties). */
  values: Map<FieldDef, unknown>;
  /** Required fields the write leaves out: an error when it creates the row. */
  missingRequired: FieldDef[];
}

export interface RowCreate extends RowValues {
  id: string | undefined;
  upsert: boolean;
}

/** Checks `values`; problems go to `details` with paths under `prefix` (like `values` or `data[3].values`). */
function checkValues(raw: unknown, table: TableDef, prefix: string, details: ErrorDetail[]): RowValues {
  const values = new Map<FieldDef, unknown>();
  if (!isObject(raw)) {
    details.push({ path: prefix, message: 'must be an object mapping field codes to values' });
    return { values, missingRequired: [] };
  }
  // Fields given with a wrong value are reported for that value, not again as missing.
  let requiredGiven = 0;
  for (const code in raw) {
    const value = raw[code];
    const field = table.fieldsByCode.get(code);
    if (!field) {
      details.push({ path: `${prefix}.${code}`, message: 'is not a field of this table' });
      continue;
    }
    if (field.required) requiredGiven++;
    // First: every later check walks the value, and a deep one is refused whatever its field's type.
    if (tooDeepAt(value, MAX_VALUE_DEPTH) !== null) {
      details.push({ path: `${prefix}.${code}`, message: `nests more than ${MAX_VALUE_DEPTH} levels of arrays and objects` });
      continue;
    }
    const bad = unstorableTextAt(value, `${prefix}.${code}`);
    if (bad !== null) {
      details.push({ path: bad, message: UNSTORABLE_TEXT });
      continue;
    }
    if (value === null) {
      if (field.required) details.push({ path: `${prefix}.${code}`, message: 'is required and cannot be null' });
      else values.set(field, null);
      continue;
    }
    const parsed = fieldType(field.type).parse(value, field);
    if (parsed.ok) values.set(field, parsed.value);
    else details.push({ path: `${prefix}.${code}`, message: parsed.message });
  }
  const all = table.compiled.required;
  return { values, missingRequired: requiredGiven === all.length ? [] : all.filter((f) => !Object.hasOwn(raw, f.code)) };
}

export function missingDetails(missing: FieldDef[], prefix: string): ErrorDetail[] {
  return missing.map((f) => ({ path: `${prefix}.${f.code}`, message: 'is required' }));
}

function unknownKeys(body: Record<string, unknown>, allowed: string[], prefix: string, details: ErrorDetail[]): void {
  for (const key of Object.keys(body)) {
    if (!allowed.includes(key)) details.push({ path: prefix ? `${prefix}.${key}` : key, message: `is not a known property; use ${allowed.join(', ')}` });
  }
}

/**
 * Checks one create `{id?, values, options?: {upsert?}}`. Required fields left out are reported
 * here unless the create may be an upsert (then only when it turns out to insert).
 */
export function checkRowCreate(body: unknown, table: TableDef, prefix: string, details: ErrorDetail[], upsertDefault = false): RowCreate {
  const here = (p: string) => (prefix ? `${prefix}.${p}` : p);
  if (!isObject(body)) {
    details.push({ path: prefix, message: 'must be an object {id?, values}' });
    return { id: undefined, upsert: false, values: new Map(), missingRequired: [] };
  }
  unknownKeys(body, ['id', 'values', 'options'], prefix, details);
  let id: string | undefined;
  if (body.id !== undefined) {
    if (typeof body.id !== 'string' || !ROW_ID.test(body.id)) {
      details.push({ path: here('id'), message: 'must be 1 to 128 of A-Z a-z 0-9 _ . : @ -, starting with a letter or digit' });
    } else id = body.id;
  }
  let upsert = upsertDefault;
  if (body.options !== undefined) {
    if (!isObject(body.options)) details.push({ path: here('options'), message: 'must be an object {upsert?}' });
    else {
      unknownKeys(body.options, ['upsert'], here('options'), details);
      if (body.options.upsert !== undefined && typeof body.options.upsert !== 'boolean') {
        details.push({ path: here('options.upsert'), message: 'must be true or false' });
      } else if (body.options.upsert !== undefined) upsert = body.options.upsert;
    }
  }
  if (body.values === undefined) details.push({ path: here('values'), message: 'is required' });
  const checked = checkValues(body.values === undefined ? {} : body.values, table, here('values'), details);
  if (!upsert || id === undefined) details.push(...missingDetails(checked.missingRequired, here('values')));
  return { id, upsert, ...checked };
}

/** Checks one partial update `{values}` (plus `id` where the body names the row). */
export function checkRowPatch(body: unknown, table: TableDef, prefix: string, details: ErrorDetail[], withId: boolean): RowValues & { id?: string } {
  const here = (p: string) => (prefix ? `${prefix}.${p}` : p);
  if (!isObject(body)) {
    details.push({ path: prefix, message: withId ? 'must be an object {id, values}' : 'must be an object {values}' });
    return { values: new Map(), missingRequired: [] };
  }
  unknownKeys(body, withId ? ['id', 'values'] : ['values'], prefix, details);
  let id: string | undefined;
  if (withId) {
    if (typeof body.id !== 'string' || body.id === '') details.push({ path: here('id'), message: 'is required: the id of the row to update' });
    else id = body.id;
  }
  if (body.values === undefined) details.push({ path: here('values'), message: 'is required' });
  return { id, ...checkValues(body.values === undefined ? {} : body.values, table, here('values'), details) };
}

/** Throws the collected problems as one 400. */
export function throwIfInvalid(details: ErrorDetail[], what: string): void {
  if (details.length > 0) throw invalid(details, what);
}
