import { FIELD_CODE, ROW_ID } from '../codes.ts';
import type { ValueCodec } from '../value-codec.ts';
import { type FieldDef, type FieldType, describe, fail, jsonColumn, ok } from './field-type.ts';

/**
 * A link to rows of a table (CONTRACT §11). The row's column holds the value as read (an id, or an
 * array of ids in link order; null for none); the links are also kept as edges (store/links/),
 * which serve the other side of a pair, the link filters and onDelete (docs/indexes.md).
 */

export type OnDelete = 'unlink' | 'restrict' | 'cascade';
export const ON_DELETE: readonly OnDelete[] = ['unlink', 'restrict', 'cascade'];

/** A link field's options as stored: `table` is always the target table's id. */
export interface LinkOptions {
  table: string;
  multiple: boolean;
  onDelete: OnDelete;
  /** The other field of a pair, on the target table. */
  inverseField?: string;
  /** Only on the request that creates the field: the pair's other field to create. */
  inverse?: { code: string; name?: string; multiple?: boolean };
}

export function linkOptions(field: FieldDef): LinkOptions {
  const o = field.options;
  return {
    table: o.table as string,
    multiple: o.multiple === true,
    onDelete: (o.onDelete as OnDelete | undefined) ?? 'unlink',
    ...(typeof o.inverseField === 'string' ? { inverseField: o.inverseField } : {}),
    ...(o.inverse !== undefined ? { inverse: o.inverse as LinkOptions['inverse'] } : {}),
  };
}

export const isLinkField = (f: FieldDef): boolean => f.type === 'link';

/** At most this many ids in one written value. */
export const MAX_LINKS_WRITTEN = 10_000;

/** The ids a value (as stored or read) holds, in link order. */
export function linkIds(value: unknown): string[] {
  if (value === null || value === undefined) return [];
  return Array.isArray(value) ? (value as string[]) : [value as string];
}

/**
 * A link column's value as read (an id, an array of ids). PostgreSQL's driver hands back a jsonb
 * string already decoded, which a row id (never starting with `"` or `[`) tells apart from JSON text.
 */
export function decodeLink(raw: unknown, codec: ValueCodec): unknown {
  if (raw === null || raw === undefined) return null;
  if (typeof raw === 'string' && raw[0] !== '"' && raw[0] !== '[') return raw;
  // A single link as SQLite holds it: a JSON string, without escapes (a row id needs none), read
  // without the parser (twice per row of an expanded page: its ids gathered, then rendered).
  if (typeof raw === 'string' && raw[0] === '"' && raw.indexOf('\\') === -1) return raw.slice(1, -1);
  return codec.decodeJson(raw);
}

const ROW_ID_MESSAGE = 'a row id (1 to 128 of A-Z a-z 0-9 _ . : @ -)';

/** What was written instead of a row id: a string is quoted (the empty one too), anything else named by its kind. */
const notAnId = (value: unknown): string => (typeof value === 'string' ? JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value) : describe(value));

export const linkType: FieldType = {
  name: 'link',
  column: 'json',
  optionsSchema: {
    type: 'object',
    properties: {
      table: { type: 'string', minLength: 1, maxLength: 128 },
      multiple: { type: 'boolean' },
      onDelete: { type: 'string', enum: [...ON_DELETE] },
      inverse: {
        type: 'object',
        properties: {
          code: { type: 'string', pattern: FIELD_CODE },
          name: { type: 'string', minLength: 1, maxLength: 255 },
          multiple: { type: 'boolean' },
        },
        required: ['code'],
        additionalProperties: false,
      },
      inverseField: { type: 'string' },
    },
    required: ['table'],
    additionalProperties: false,
  },
  parse(value, field) {
    if (!linkOptions(field).multiple) {
      return typeof value === 'string' && ROW_ID.test(value) ? ok(value) : fail(`must be ${ROW_ID_MESSAGE} or null, not ${notAnId(value)}`);
    }
    if (!Array.isArray(value)) return fail(`must be an array of row ids (a multiple link), not ${describe(value)}`);
    if (value.length > MAX_LINKS_WRITTEN) return fail(`holds more than ${MAX_LINKS_WRITTEN} ids`);
    const seen = new Set<string>();
    for (const [i, id] of value.entries()) {
      if (typeof id !== 'string' || !ROW_ID.test(id)) return fail(`[${i}] must be ${ROW_ID_MESSAGE}, not ${notAnId(id)}`);
      if (seen.has(id)) return fail(`[${i}] repeats id ${id}: each linked row appears once`);
      seen.add(id);
    }
    // No links is stored as null, read as [].
    return ok(value.length === 0 ? null : value);
  },
  ...jsonColumn,
  fromDb: decodeLink,
  // As answered: SQLite's stored JSON text itself (an id's string, an array of ids), not parsed to be
  // written out again (a customer's 20,000 order ids); PostgreSQL's driver has decoded it already.
  jsonFromDb: (raw, codec) => (typeof raw === 'string' && (raw[0] === '"' || raw[0] === '[') ? raw : JSON.stringify(decodeLink(raw, codec))),
  // A single link's cell is the id itself; a multiple link's, the JSON array.
  toText: (value) => (typeof value === 'string' ? value : JSON.stringify(value)),
  fromText(text) {
    if (text.startsWith('[')) {
      try {
        return JSON.parse(text);
      } catch {
        return text;
      }
    }
    return text;
  },
  nullValue: (field) => (linkOptions(field).multiple ? [] : null),
  // The link operators (_has, _some, _none, _every, and _eq on a single link) are parsed by row-filter.ts itself.
  filterOps: [],
  sortable: false,
  valueSchema(field) {
    const { table, multiple } = linkOptions(field);
    const one = { oneOf: [{ type: 'string', description: `the id of a row of table ${table}` }, LINKED_ROW] };
    return multiple ? { type: 'array', items: one, description: `the linked rows of table ${table} in link order: their ids, or their records where \`expand\` names the field` } : one;
  },
  writeSchema(field) {
    const { table, multiple } = linkOptions(field);
    const id = { type: 'string', pattern: ROW_ID.source, description: `the id of a row of table ${table}` };
    return multiple ? { type: 'array', items: id, uniqueItems: true, maxItems: MAX_LINKS_WRITTEN, description: 'distinct row ids, in link order; [] or null: no links' } : id;
  },
};

/** A linked row as `expand` gives it: a record of the target table (see its document), its own links as ids. */
const LINKED_ROW = {
  type: 'object',
  description: 'the linked row\'s record (expand), as its own table\'s document describes it',
  properties: {
    id: { type: 'string' },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
    createdBy: { type: 'string' },
    updatedBy: { type: 'string' },
    values: { type: 'object' },
  },
  required: ['id', 'createdAt', 'updatedAt', 'createdBy', 'updatedBy', 'values'],
};

/** JSON Schema of a filter condition on a link field (CONTRACT §11), for OpenAPI. */
export function linkConditionSchema(field: FieldDef): Record<string, unknown> {
  const { table, multiple } = linkOptions(field);
  const id = { type: 'string', description: 'a row id of the target table' };
  const sub = { type: 'object', description: `a filter in the grammar of table ${table} (see its document); nested through at most 3 links` };
  return {
    type: 'object',
    properties: {
      _isNull: { type: 'boolean', description: 'true: no links' },
      _has: id,
      ...(multiple ? {} : { _eq: id }),
      _some: sub,
      _none: sub,
      _every: { ...sub, description: `${sub.description}; true when there are no links` },
    },
    additionalProperties: false,
    minProperties: 1,
  };
}

/**
 * Where a link field's links are kept as edges: one table per one-way link or pair
 * (`links_<hex of the owning field's id>`, columns `src`, `dst`), the owner being the one-way
 * field, or of a pair the field with the smaller id. The owner's rows are `src`, its targets
 * `dst`; the other field of a pair reads the same edges the other way round.
 */
export interface EdgeSide {
  /** The physical edge table. */
  table: string;
  /** The column holding the field's own rows, and the one holding the rows it links to. */
  mine: 'src' | 'dst';
  other: 'src' | 'dst';
}

export function edgeOwner(field: FieldDef): string {
  const partner = linkOptions(field).inverseField;
  return partner !== undefined && partner < field.id ? partner : field.id;
}

export function edgesOf(field: FieldDef): EdgeSide {
  const owner = edgeOwner(field);
  const mine = owner === field.id ? 'src' : 'dst';
  return { table: `links_${owner.replace(/-/g, '').toLowerCase()}`, mine, other: mine === 'src' ? 'dst' : 'src' };
}

/** A link field of some table (possibly the same one) that links to a given table's rows. */
export interface IncomingLink {
  field: FieldDef;
  /** The table holding the field. */
  tableId: string;
}
