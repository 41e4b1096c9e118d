import type { ErrorDetail } from './errors.ts';
import type { FilterOp } from './field-types/field-type.ts';
import { fieldType } from './field-types/registry.ts';
import { type FieldLookup, type RowColumn, SYSTEM_COLUMNS, fieldTarget, isSystemColumn } from './row-columns.ts';
import { UNSTORABLE_TEXT, unstorableTextAt } from './storable-text.ts';
import { isObject } from './json.ts';
import { ROW_ID } from './codes.ts';
import { linkOptions } from './field-types/link.ts';

/**
 * The row filter of CONTRACT §6, parsed against a table: `values` (field code → condition),
 * system columns (→ condition), `_and`, `_or`, `_not`. Keys of one object and operators of one
 * condition are ANDed. Values are checked and normalised here; nothing later re-validates.
 */
export type RowFilter =
  | { kind: 'and' | 'or'; items: RowFilter[] }
  | { kind: 'not'; item: RowFilter }
  | { kind: 'isNull'; target: RowColumn; isNull: boolean }
  | { kind: 'cmp'; target: RowColumn; op: FilterOp; value: unknown }
  /** `_contains` on a list: some element equals the scalar value. */
  | { kind: 'has'; target: RowColumn; value: string | number | boolean }
  | LinkFilter;

/**
 * A condition on a link field (CONTRACT §11): `linksTo` (`_has`, and `_eq` on a single link) holds
 * when the row links to the row `id`; `some`, `none` and `every` when some, none or every linked
 * row (of the table `table`) meets `filter`. `every` of no links is true.
 */
export type LinkFilter =
  | { kind: 'link'; target: RowColumn; table: string; mode: 'linksTo'; id: string }
  | { kind: 'link'; target: RowColumn; table: string; mode: 'some' | 'none' | 'every'; filter: RowFilter };

/** How many links a filter may follow, one inside another. */
export const MAX_LINK_DEPTH = 3;
const LINK_OPS = ['_has', '_some', '_none', '_every'];

const MAX_DEPTH = 16;
/**
 * Parts in all: each filter (an object of `_and`, `_or` or `_not`, empty ones included), each
 * operator of a condition, and each unknown key or field. The SQL grows with them, and SQLite
 * refuses an expression more than 1000 terms deep: an `_or` of 1000 filters.
 */
const MAX_NODES = 500;
const PATTERN_OPS: readonly FilterOp[] = ['_contains', '_startsWith', '_endsWith'];

class Parser {
  readonly details: ErrorDetail[] = [];
  private nodes = 0;
  /** Set once the filter has more than MAX_NODES parts: reported once, and nothing more is read. */
  private tooLarge = false;

  /** The tables the filter's `_some`, `_none` and `_every` look into, as far as it was read (problems or not). */
  readonly reached = new Set<string>();

  constructor(private readonly table: FieldLookup) {}

  private problem(path: string, message: string): null {
    this.details.push({ path, message });
    return null;
  }

  /** Counts one more part; false (the problem reported once) past the limit. */
  private count(path: string): boolean {
    if (this.tooLarge) return false;
    if (++this.nodes <= MAX_NODES) return true;
    this.tooLarge = true;
    this.problem(path, `has more than ${MAX_NODES} parts (filters and operators)`);
    return false;
  }

  filter(value: unknown, path: string, depth: number, table: FieldLookup = this.table, links = 0): RowFilter | null {
    // Every filter counts, empty or not an object: `{"_and": [{}, {}, …]}` grows the SQL (or the problems) as conditions do.
    if (!this.count(path)) return null;
    if (!isObject(value)) return this.problem(path, 'must be an object');
    if (depth > MAX_DEPTH) return this.problem(path, `is nested more than ${MAX_DEPTH} levels deep`);
    const items: RowFilter[] = [];
    for (const [key, v] of Object.entries(value)) {
      const here = `${path}.${key}`;
      if (this.tooLarge) return null;
      let parsed: RowFilter | null = null;
      if (key === '_and' || key === '_or') {
        if (!Array.isArray(v) || v.length === 0) {
          this.problem(here, 'must be a non-empty array of filters');
          continue;
        }
        const subs = v.map((s, i) => this.filter(s, `${here}[${i}]`, depth + 1, table, links));
        parsed = { kind: key === '_and' ? 'and' : 'or', items: subs.filter((s): s is RowFilter => s !== null) };
      } else if (key === '_not') {
        const sub = this.filter(v, here, depth + 1, table, links);
        parsed = sub && { kind: 'not', item: sub };
      } else if (key === 'values') {
        if (!isObject(v)) {
          this.problem(here, 'must be an object mapping field codes to conditions');
          continue;
        }
        const conds: RowFilter[] = [];
        for (const [code, cond] of Object.entries(v)) {
          const field = table.fieldsByCode.get(code);
          if (!field) {
            if (this.count(here)) this.problem(`${here}.${code}`, 'is not a field of this table');
          } else conds.push(...this.condition(fieldTarget(field), cond, `${here}.${code}`, depth, links));
        }
        parsed = { kind: 'and', items: conds };
      } else if (isSystemColumn(key)) {
        parsed = { kind: 'and', items: this.condition(SYSTEM_COLUMNS[key], v, here, depth, links) };
      } else if (this.count(path)) {
        this.problem(here, `unknown key; use values, ${Object.keys(SYSTEM_COLUMNS).join(', ')}, _and, _or or _not`);
      }
      if (parsed) items.push(parsed);
    }
    return { kind: 'and', items };
  }

  private condition(target: RowColumn, cond: unknown, path: string, depth: number, links: number): RowFilter[] {
    if (!isObject(cond) || Object.keys(cond).length === 0) {
      this.problem(path, 'must be an object {operator: value}');
      return [];
    }
    const out: RowFilter[] = [];
    for (const [op, value] of Object.entries(cond)) {
      if (!this.count(path)) return out;
      const parsed = target.type.name === 'link' && op !== '_isNull' ? this.link(target, op, value, `${path}.${op}`, depth, links) : this.comparison(target, op, value, `${path}.${op}`);
      if (parsed) out.push(parsed);
    }
    return out;
  }

  /** A condition on a link field: an id it links to, or a filter in the target table's grammar. */
  private link(target: RowColumn, op: string, value: unknown, path: string, depth: number, links: number): RowFilter | null {
    const { table, multiple } = linkOptions(target.field);
    const ops = `_has, _some, _none, _every, _isNull${multiple ? '' : ', _eq'}`;
    if (op === '_eq' && multiple) return this.problem(path, `_eq is for a single link; ${target.key} is a multiple link: use _has`);
    if (op === '_eq' || op === '_has') {
      if (value === null) return this.problem(path, `cannot be null; use {"_isNull": true}`);
      if (typeof value !== 'string' || !ROW_ID.test(value)) return this.problem(path, 'must be a row id');
      return { kind: 'link', target, table, mode: 'linksTo', id: value };
    }
    if (!LINK_OPS.includes(op)) return this.problem(path, `operator not allowed on ${target.key} (a link); use ${ops}`);
    if (links + 1 > MAX_LINK_DEPTH) return this.problem(path, `follows more than ${MAX_LINK_DEPTH} links, one inside another`);
    // Only where the lookup lists the linked tables (store/links/linked-tables.ts).
    if (this.table.linked === undefined) return this.problem(path, `filters through links to other tables are not available here; use _has, _isNull${multiple ? '' : ', _eq'}`);
    const linked = table === this.table.id ? this.table : this.table.linked.get(table);
    // A table deleted since the field was read (a stored filter read again: a flow's, events/delivery-store.ts).
    if (!linked) return this.problem(path, `${target.key} links to a table that no longer exists`);
    this.reached.add(table);
    const filter = this.filter(value, path, depth + 1, linked, links + 1);
    if (!filter) return null;
    return { kind: 'link', target, table, mode: op.slice(1) as 'some' | 'none' | 'every', filter };
  }

  private comparison(target: RowColumn, op: string, value: unknown, path: string): RowFilter | null {
    const { type } = target;
    if (op === '_isNull') {
      if (typeof value !== 'boolean') return this.problem(path, 'must be true or false');
      return { kind: 'isNull', target, isNull: value };
    }
    const allowed = type.filterOps;
    if (!['_eq', '_gt', '_gte', '_lt', '_lte', ...PATTERN_OPS].includes(op)) {
      return this.problem(path, 'unknown operator; use _eq, _gt, _gte, _lt, _lte, _contains, _startsWith, _endsWith or _isNull');
    }
    if (!allowed.includes(op as FilterOp)) {
      const ops = [...allowed, '_isNull'].join(', ');
      return this.problem(path, `operator not allowed on ${target.key} (a ${type.name} column); use ${ops}`);
    }
    if (value === null) return this.problem(path, `cannot be null; use {"_isNull": true}`);
    if (unstorableTextAt(value, path) !== null) return this.problem(path, UNSTORABLE_TEXT);
    if (type.column === 'json') {
      // `_contains` on a list: one element equals the value.
      if (typeof value !== 'string' && typeof value !== 'boolean' && !(typeof value === 'number' && Number.isFinite(value))) {
        return this.problem(path, 'must be a string, number or boolean: an element of the list');
      }
      return { kind: 'has', target, value };
    }
    if (PATTERN_OPS.includes(op as FilterOp)) {
      if (typeof value !== 'string') return this.problem(path, 'must be a string');
      return { kind: 'cmp', target, op: op as FilterOp, value };
    }
    const compareAs = fieldType(type.comparisonType ?? type.name);
    const parsed = compareAs.parse(value, { ...target.field, type: compareAs.name, options: {} });
    if (!parsed.ok) return this.problem(path, parsed.message);
    return { kind: 'cmp', target, op: op as FilterOp, value: parsed.value };
  }
}

/**
 * Parses a filter already decoded from JSON; its problems are added to `details` (then the result
 * is null). `reached`, when given, gets the ids of the tables its `_some`, `_none` and `_every`
 * look into, even when it has problems: an access check asks for them before the problems are
 * answered, so a key never learns of a table it may not read from a 400 naming its fields.
 */
export function parseRowFilter(value: unknown, table: FieldLookup, details: ErrorDetail[], reached?: Set<string>): RowFilter | null {
  const parser = new Parser(table);
  const filter = parser.filter(value, 'filter', 0);
  details.push(...parser.details);
  if (reached) for (const id of parser.reached) reached.add(id);
  return parser.details.length > 0 ? null : filter;
}
