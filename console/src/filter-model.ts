import type { Field, FieldType } from './types.ts';
import { type FilterOp, SYSTEM_COLUMNS, filterValue } from './field-types.ts';

/**
 * The filter builder's model and its translation to and from the API's filter JSON (CONTRACT §6):
 * a group of conditions and groups joined by all (`_and`) or any (`_or`), possibly negated (`_not`).
 * The page URL holds the API's JSON itself, so a shared view is exactly the request it makes.
 */
export interface Condition {
  kind: 'condition';
  key: string; // a field code or a system column
  op: FilterOp;
  value: string;
}

export interface Group {
  kind: 'group';
  join: 'and' | 'or';
  not: boolean;
  items: (Condition | Group)[];
}

export const emptyGroup = (): Group => ({ kind: 'group', join: 'and', not: false, items: [] });

const isSystem = (key: string) => (SYSTEM_COLUMNS as readonly string[]).includes(key);

function typeOf(key: string, fields: Field[]): FieldType | 'system' {
  return fields.find((f) => f.code === key)?.type ?? 'system';
}

function conditionJson(c: Condition, fields: Field[]): Record<string, unknown> {
  const cond = { [c.op]: filterValue(typeOf(c.key, fields), c.op, c.value) };
  return isSystem(c.key) ? { [c.key]: cond } : { values: { [c.key]: cond } };
}

/** The API filter for a group, or null when it holds no condition. */
export function toApiFilter(group: Group, fields: Field[]): Record<string, unknown> | null {
  const parts = group.items
    .map((item) => (item.kind === 'condition' ? conditionJson(item, fields) : toApiFilter(item, fields)))
    .filter((p): p is Record<string, unknown> => p !== null);
  if (parts.length === 0) return null;
  const joined = parts.length === 1 ? parts[0] : { [group.join === 'and' ? '_and' : '_or']: parts };
  return group.not ? { _not: joined } : joined;
}

const text = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

function conditions(key: string, cond: unknown): Condition[] {
  if (typeof cond !== 'object' || cond === null) throw new Error(`the condition on ${key} is not an object`);
  return Object.entries(cond).map(([op, v]) => ({ kind: 'condition', key, op: op as FilterOp, value: text(v) }));
}

/** The builder's model of an API filter (any the API takes: the keys of one object are ANDed). */
export function fromApiFilter(json: unknown): Group {
  const read = readGroup(json);
  const only = read.items[0];
  return read.items.length === 1 && only.kind === 'group' && !read.not ? only : read;
}

function readGroup(json: unknown): Group {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new Error('a filter is a JSON object');
  const items: (Condition | Group)[] = [];
  for (const [key, v] of Object.entries(json)) {
    if (key === '_and' || key === '_or') {
      if (!Array.isArray(v)) throw new Error(`${key} takes an array`);
      items.push({ kind: 'group', join: key === '_and' ? 'and' : 'or', not: false, items: v.map((f) => simplest(readGroup(f))) });
    } else if (key === '_not') {
      items.push({ ...fromApiFilter(v), not: true });
    } else if (key === 'values') {
      if (typeof v !== 'object' || v === null) throw new Error('values takes an object');
      for (const [code, cond] of Object.entries(v)) items.push(...conditions(code, cond));
    } else {
      items.push(...conditions(key, v));
    }
  }
  return { kind: 'group', join: 'and', not: false, items };
}

/** A group of one item, not negated, is that item. */
function simplest(group: Group): Condition | Group {
  return group.items.length === 1 && !group.not ? group.items[0] : group;
}
