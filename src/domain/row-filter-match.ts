import type { LinkFilter, RowFilter } from './row-filter.ts';
import type { RowColumn } from './row-columns.ts';
import type { RowRecord } from './row.ts';

/**
 * The row filter of CONTRACT §6 evaluated in memory, on a row record as the API renders it
 * (`{id, createdAt, …, values}`): for a flow's trigger, which judges each change's row without a
 * query. It answers as the database does (row-sql.ts): a comparison with null is false, text
 * compares in code point order (byte order of UTF-8, COLLATE "C"), date-times as the UTC text both
 * sides are normalised to, and `_contains` on a list finds an element of the same JSON type.
 * Adapted from the reference evaluator of the property tests (test/support/reference-rows.ts),
 * against which test/domain/row-filter-match.test.ts checks it.
 *
 * A condition through a link (`_some`, `_none`, `_every`) asks about the linked rows, which the
 * record does not hold: the caller finds, by a query, which of the rows its records link to meet
 * each such condition's filter (store/links/linked-matches.ts), and passes them as `linked`. Those
 * are the linked rows as they are now; for a state of the row the linked rows may since have left
 * (the row before a change: a change stream keeps a change whose row matched before it), what they
 * cannot tell is unknown, and `mayHaveMatched` answers whether the row may have matched.
 */

/**
 * For each `_some`, `_none` and `_every` of a filter (not those inside another's): of the rows the
 * records link to through its field, those that meet the condition's filter and those no longer
 * there; the others are there and do not meet it. Judging the row as it is, a linked row not there
 * counts for none of the three, as the database's own reading of a list would not see it.
 */
export type LinkedMatches = ReadonlyMap<LinkFilter, LinkedRows>;
export interface LinkedRows {
  meeting: Set<string>;
  gone: Set<string>;
}

/**
 * How a state of a row that may be past is judged through its links (`mayHaveMatched`):
 * `gone` — by the linked rows as they are now, but one no longer there cannot be told (a row
 * updated after its linked row was deleted: unlinked, or its own update); `unknown` — nothing can
 * be told of a link that holds rows (a deleted row: its linked rows may have changed since it
 * matched, as when its customer moved country, or gone with it, as in a cascade).
 */
export type PastLinks = 'gone' | 'unknown';

/** A condition on the rows a link leads to. */
export type LinkQuantifier = Extract<LinkFilter, { mode: 'some' | 'none' | 'every' }>;

/** The conditions of a filter that follow a link to judge the linked rows (`_some`, `_none`, `_every`), those inside another's left to it. */
export function linkQuantifiers(filter: RowFilter | null, into: LinkQuantifier[] = []): LinkQuantifier[] {
  if (filter === null) return into;
  switch (filter.kind) {
    case 'and':
    case 'or':
      for (const item of filter.items) linkQuantifiers(item, into);
      break;
    case 'not':
      linkQuantifiers(filter.item, into);
      break;
    case 'link':
      if (filter.mode !== 'linksTo') into.push(filter);
      break;
  }
  return into;
}

/**
 * Whether an update that wrote the fields `written` (its change entry's `changedFields`, codes) may
 * have changed what the filter reads of its row: a field it reads (a link field's own value
 * included: the linked rows' fields are read through it), or `updatedAt`/`updatedBy`, which every
 * update writes. When it may not, the row before the update is judged as the row after it is.
 */
export function mayChangeFor(filter: RowFilter, written: readonly string[]): boolean {
  switch (filter.kind) {
    case 'and':
    case 'or':
      return filter.items.some((f) => mayChangeFor(f, written));
    case 'not':
      return mayChangeFor(filter.item, written);
    default:
      return filter.target.system ? filter.target.key === 'updatedAt' || filter.target.key === 'updatedBy' : written.includes(filter.target.key);
  }
}

/** The ids a link value holds: a single link's id or a multiple link's list (none for null). */
export function linkedIds(value: unknown): string[] {
  if (Array.isArray(value)) return value.filter((id): id is string => typeof id === 'string');
  return typeof value === 'string' ? [value] : [];
}

function valueOf(record: RowRecord, target: RowColumn): unknown {
  const v = target.system ? (record as unknown as Record<string, unknown>)[target.key] : record.values[target.key];
  return v === undefined ? null : v;
}

/** Code point order: the order of UTF-8 bytes, which is not JavaScript's UTF-16 `<`. */
function compareText(a: string, b: string): number {
  return Math.sign(Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
}

function compare(typeName: string, a: unknown, b: unknown): number {
  if (typeName === 'number') return a === b ? 0 : (a as number) < (b as number) ? -1 : 1;
  if (typeName === 'boolean') return a === b ? 0 : a === false ? -1 : 1;
  if (typeName === 'text' || typeName === 'select') return compareText(a as string, b as string);
  // dateTime, date, time, yearMonth: fixed-width ASCII forms, so text order is time order.
  return a === b ? 0 : (a as string) < (b as string) ? -1 : 1;
}

/** Whether the row matches the filter (its linked rows judged as they are now, `linked`). */
export function matchesRowFilter(filter: RowFilter, record: RowRecord, linked?: LinkedMatches): boolean {
  return truth(filter, record, linked, null) === true;
}

/** Whether a past state of the row may have matched: true unless the filter is false of it whatever its linked rows were (`past`). */
export function mayHaveMatched(filter: RowFilter, record: RowRecord, linked: LinkedMatches | undefined, past: PastLinks): boolean {
  return truth(filter, record, linked, past) !== false;
}

/** Three-valued (null: cannot be told), as SQL's AND, OR and NOT combine unknowns; only links, judged for a past state, are ever unknown. */
function truth(filter: RowFilter, record: RowRecord, linked: LinkedMatches | undefined, past: PastLinks | null): boolean | null {
  switch (filter.kind) {
    case 'and':
    case 'or': {
      // One item false decides an AND, one true an OR; else an unknown item leaves it unknown.
      const decides = filter.kind === 'or';
      let unknown = false;
      for (const f of filter.items) {
        const t = truth(f, record, linked, past);
        if (t === decides) return decides;
        if (t === null) unknown = true;
      }
      return unknown ? null : !decides;
    }
    case 'not': {
      const t = truth(filter.item, record, linked, past);
      return t === null ? null : !t;
    }
    case 'link': {
      const ids = linkedIds(valueOf(record, filter.target));
      if (filter.mode === 'linksTo') return ids.includes(filter.id);
      // No links: `_some` false, `_none` and `_every` true, whatever the linked rows.
      if (ids.length === 0) return filter.mode !== 'some';
      if (past === 'unknown') return null;
      const rows = linked?.get(filter);
      if (!rows) throw new Error(`matchesRowFilter: _${filter.mode} on ${filter.target.key} needs its linked rows (LinkedMatches)`);
      // Each linked row: meets it, does not, or is gone (not among them now; for a past state, cannot be told).
      const each = ids.map((id) => (rows.meeting.has(id) ? true : !rows.gone.has(id) ? false : past === 'gone' ? null : undefined));
      if (filter.mode === 'every') {
        // As in SQL (link-sql.ts): a row gone is not among the linked rows now.
        if (each.includes(false)) return false;
        return each.includes(null) ? null : true;
      }
      const some = each.includes(true) ? true : each.includes(null) ? null : false;
      return filter.mode === 'some' ? some : some === null ? null : !some;
    }
    case 'isNull': {
      const v = valueOf(record, filter.target);
      // A multiple link with no links reads [] and is null in its column.
      const empty = v === null || (filter.target.type.name === 'link' && Array.isArray(v) && v.length === 0);
      return empty === filter.isNull;
    }
    case 'has': {
      const list = valueOf(record, filter.target);
      return Array.isArray(list) && list.some((e) => typeof e === typeof filter.value && e === filter.value);
    }
    case 'cmp': {
      const v = valueOf(record, filter.target);
      if (v === null) return false;
      const operand = filter.value;
      switch (filter.op) {
        case '_contains':
          return (v as string).includes(operand as string);
        case '_startsWith':
          return (v as string).startsWith(operand as string);
        case '_endsWith':
          return (v as string).endsWith(operand as string);
      }
      const c = compare(filter.target.type.comparisonType ?? filter.target.type.name, v, operand);
      switch (filter.op) {
        case '_eq':
          return c === 0;
        case '_gt':
          return c > 0;
        case '_gte':
          return c >= 0;
        case '_lt':
          return c < 0;
        case '_lte':
          return c <= 0;
      }
    }
  }
  return false;
}
