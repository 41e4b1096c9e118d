import { normaliseDateTime } from './dates.ts';
import { UNSTORABLE_TEXT, unstorableTextAt } from './storable-text.ts';
import { jsonParam, readQuery } from './query-string.ts';
import { type ErrorDetail, invalid } from './errors.ts';
import { isObject } from './json.ts';

/**
 * The list query of the generic resources (CONTRACT §9): `paging`, `filter`, `sorting` and
 * `relations`, each a JSON string, parsed into typed values against the resource's attributes.
 */

/** How an attribute of a generic resource is stored and compared. */
export type AttrType = 'text' | 'integer' | 'boolean' | 'timestamp' | 'json';

export const RESOURCE_OPS = [
  'eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like', 'notLike', 'iLike', 'in', 'notIn', 'is', 'isNot',
] as const;
export type ResourceOp = (typeof RESOURCE_OPS)[number];

/** The operators each attribute type accepts. */
export const OPS_BY_TYPE: Record<AttrType, readonly ResourceOp[]> = {
  text: RESOURCE_OPS,
  integer: ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in', 'notIn', 'is', 'isNot'],
  timestamp: ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in', 'notIn', 'is', 'isNot'],
  boolean: ['eq', 'neq', 'is', 'isNot'],
  json: ['is', 'isNot'],
};

export type ResourceFilter =
  | { kind: 'and' | 'or'; items: ResourceFilter[] }
  | { kind: 'cmp'; attr: string; op: ResourceOp; value: unknown };

export interface ResourceSort {
  attr: string;
  direction: 'asc' | 'desc';
}

export interface ResourceListQuery {
  limit: number;
  offset: number;
  filter: ResourceFilter | null;
  sorting: ResourceSort[];
  relations: string[];
}

export interface QueryableAttrs {
  /** Attribute name → type, for every attribute that can be filtered and sorted. */
  types: Record<string, AttrType>;
  relations: readonly string[];
}

export const MAX_PAGE_LIMIT = 1000;
export const DEFAULT_PAGE_LIMIT = 50;
const MAX_FILTER_DEPTH = 16;
/**
 * A filter's parts in all (each filter object, each operator, each unknown attribute) and the values
 * of its `in` and `notIn` lists in all: the SQL grows with them (SQLite takes an expression at most
 * 1000 terms deep and 32,766 parameters).
 */
export const MAX_FILTER_PARTS = 500;
export const MAX_FILTER_LIST_VALUES = 10_000;

/** How much of a filter has been read: past a limit, that is reported once and nothing more is read. */
interface FilterBudget {
  parts: number;
  listValues: number;
  exceeded: boolean;
}

function spend(budget: FilterBudget, parts: number, listValues: number, details: ErrorDetail[]): boolean {
  if (budget.exceeded) return false;
  budget.parts += parts;
  budget.listValues += listValues;
  if (budget.parts > MAX_FILTER_PARTS) details.push({ path: 'filter', message: `has more than ${MAX_FILTER_PARTS} parts (filters, operators and unknown fields)` });
  else if (budget.listValues > MAX_FILTER_LIST_VALUES) details.push({ path: 'filter', message: `has more than ${MAX_FILTER_LIST_VALUES} values in its in and notIn lists` });
  else return true;
  budget.exceeded = true;
  return false;
}

/** The type of a queryable attribute; own keys only, so `constructor` or `__proto__` is unknown, not Object's. */
const typeOf = (attrs: QueryableAttrs, name: string): AttrType | undefined =>
  Object.hasOwn(attrs.types, name) ? attrs.types[name] : undefined;

function parsePaging(value: unknown, details: ErrorDetail[]): { limit: number; offset: number } {
  const paging = { limit: DEFAULT_PAGE_LIMIT, offset: 0 };
  if (value === undefined) return paging;
  if (!isObject(value)) {
    details.push({ path: 'paging', message: 'must be an object {limit, offset}' });
    return paging;
  }
  for (const [key, v] of Object.entries(value)) {
    if (key === 'limit') {
      if (!Number.isInteger(v) || (v as number) < 1 || (v as number) > MAX_PAGE_LIMIT) {
        details.push({ path: 'paging.limit', message: `must be an integer from 1 to ${MAX_PAGE_LIMIT}` });
      } else paging.limit = v as number;
    } else if (key === 'offset') {
      if (!Number.isSafeInteger(v) || (v as number) < 0) {
        details.push({ path: 'paging.offset', message: 'must be an integer of 0 or more' });
      } else paging.offset = v as number;
    } else {
      details.push({ path: `paging.${key}`, message: 'is not a paging key; use limit and offset' });
    }
  }
  return paging;
}

/** Checks one comparison value against the attribute's type; returns it normalised. */
function comparisonValue(type: AttrType, op: ResourceOp, value: unknown, path: string, details: ErrorDetail[]): unknown {
  if (op === 'is' || op === 'isNot') {
    if (value === null || (type === 'boolean' && typeof value === 'boolean')) return value;
    details.push({ path, message: type === 'boolean' ? 'must be null, true or false' : 'must be null' });
    return undefined;
  }
  if (op === 'in' || op === 'notIn') {
    if (!Array.isArray(value) || value.length === 0 || value.length > MAX_PAGE_LIMIT) {
      details.push({ path, message: `must be an array of 1 to ${MAX_PAGE_LIMIT} values` });
      return undefined;
    }
    return value.map((v, i) => comparisonValue(type, 'eq', v, `${path}[${i}]`, details));
  }
  if (value === null) {
    details.push({ path, message: 'cannot be null; use is or isNot to test for null' });
    return undefined;
  }
  if (type === 'boolean') {
    if (typeof value !== 'boolean') details.push({ path, message: 'must be true or false' });
    return value;
  }
  if (type === 'integer') {
    if (!Number.isSafeInteger(value)) details.push({ path, message: 'must be an integer' });
    return value;
  }
  if (typeof value !== 'string') {
    details.push({ path, message: 'must be a string' });
    return undefined;
  }
  if (unstorableTextAt(value, path) !== null) {
    details.push({ path, message: UNSTORABLE_TEXT });
    return undefined;
  }
  if ((op === 'like' || op === 'notLike' || op === 'iLike') && /(?:^|[^\\])(?:\\\\)*\\$/.test(value)) {
    // A backslash escapes the next character; PostgreSQL refuses a pattern that ends in one.
    details.push({ path, message: 'ends with a lone \\ escape; write \\\\ for a literal backslash' });
    return undefined;
  }
  if (type === 'timestamp') {
    const iso = normaliseDateTime(value);
    if (iso === null) details.push({ path, message: 'must be an ISO 8601 date-time with an offset' });
    return iso;
  }
  return value;
}

function parseFilter(value: unknown, attrs: QueryableAttrs, path: string, depth: number, details: ErrorDetail[], budget: FilterBudget): ResourceFilter | null {
  if (!spend(budget, 1, 0, details)) return null;
  if (!isObject(value)) {
    details.push({ path, message: 'must be an object' });
    return null;
  }
  if (depth > MAX_FILTER_DEPTH) {
    details.push({ path, message: `is nested more than ${MAX_FILTER_DEPTH} levels deep` });
    return null;
  }
  const items: ResourceFilter[] = [];
  for (const [key, cond] of Object.entries(value)) {
    const here = `${path}.${key}`;
    if (key === 'and' || key === 'or') {
      if (!Array.isArray(cond) || cond.length === 0) {
        details.push({ path: here, message: 'must be a non-empty array of filters' });
        continue;
      }
      const subs = cond.map((c, i) => parseFilter(c, attrs, `${here}[${i}]`, depth + 1, details, budget));
      items.push({ kind: key, items: subs.filter((s): s is ResourceFilter => s !== null) });
      continue;
    }
    if (budget.exceeded) return null;
    const type = typeOf(attrs, key);
    if (type === undefined) {
      if (spend(budget, 1, 0, details)) details.push({ path: here, message: `unknown field; known fields are ${Object.keys(attrs.types).join(', ')}` });
      continue;
    }
    if (!isObject(cond) || Object.keys(cond).length === 0) {
      details.push({ path: here, message: 'must be an object {operator: value}' });
      continue;
    }
    for (const [op, v] of Object.entries(cond)) {
      if (!spend(budget, 1, (op === 'in' || op === 'notIn') && Array.isArray(v) ? v.length : 0, details)) return null;
      if (!(RESOURCE_OPS as readonly string[]).includes(op)) {
        details.push({ path: `${here}.${op}`, message: `unknown operator; use one of ${RESOURCE_OPS.join(', ')}` });
      } else if (!OPS_BY_TYPE[type].includes(op as ResourceOp)) {
        details.push({ path: `${here}.${op}`, message: `operator not allowed on a ${type} field` });
      } else {
        items.push({ kind: 'cmp', attr: key, op: op as ResourceOp, value: comparisonValue(type, op as ResourceOp, v, `${here}.${op}`, details) });
      }
    }
  }
  return { kind: 'and', items };
}

function parseSorting(value: unknown, attrs: QueryableAttrs, details: ErrorDetail[]): ResourceSort[] {
  if (value === undefined) return [];
  if (!isObject(value)) {
    details.push({ path: 'sorting', message: 'must be an object {field: "asc" | "desc"}' });
    return [];
  }
  const sorts: ResourceSort[] = [];
  for (const [attr, direction] of Object.entries(value)) {
    const type = typeOf(attrs, attr);
    if (type === undefined) details.push({ path: `sorting.${attr}`, message: 'unknown field' });
    else if (type === 'json') details.push({ path: `sorting.${attr}`, message: 'cannot sort by a JSON field' });
    else if (direction !== 'asc' && direction !== 'desc') details.push({ path: `sorting.${attr}`, message: 'must be "asc" or "desc"' });
    else sorts.push({ attr, direction });
  }
  return sorts;
}

function parseRelations(value: unknown, attrs: QueryableAttrs, details: ErrorDetail[]): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    details.push({ path: 'relations', message: 'must be an array of relation names' });
    return [];
  }
  const names: string[] = [];
  value.forEach((name, i) => {
    if (typeof name !== 'string' || !attrs.relations.includes(name)) {
      const known = attrs.relations.length > 0 ? `known relations are ${attrs.relations.join(', ')}` : 'this resource has no relations';
      // Only a string is quoted: another value may nest deeper than JSON.stringify can go.
      const given = typeof name === 'string' ? JSON.stringify(name) : `(a ${Array.isArray(name) ? 'list' : name === null ? 'null' : typeof name})`;
      details.push({ path: `relations[${i}]`, message: `unknown relation ${given}; ${known}` });
    } else if (!names.includes(name)) names.push(name);
  });
  return names;
}

const LIST_PARAMS = ['paging', 'filter', 'sorting', 'relations'] as const;

/** Parses a list request's query string; every problem is reported at once as one 400. */
export function parseResourceListQuery(query: Record<string, unknown>, attrs: QueryableAttrs): ResourceListQuery {
  const details: ErrorDetail[] = [];
  const params = readQuery(query, LIST_PARAMS, details);
  const paging = parsePaging(jsonParam('paging', params.paging, details), details);
  const rawFilter = jsonParam('filter', params.filter, details);
  const budget = { parts: 0, listValues: 0, exceeded: false };
  const filter = rawFilter === undefined ? null : parseFilter(rawFilter, attrs, 'filter', 0, details, budget);
  const sorting = parseSorting(jsonParam('sorting', params.sorting, details), attrs, details);
  const relations = parseRelations(jsonParam('relations', params.relations, details), attrs, details);
  if (details.length > 0) throw invalid(details, 'Invalid list query');
  return { ...paging, filter, sorting, relations };
}
