import type { ColumnKind, ValueCodec } from '../value-codec.ts';
import type { FileLink, StoredFile } from '../file-value.ts';

export const FIELD_TYPE_NAMES = [
  'text', 'number', 'boolean', 'dateTime', 'date', 'time', 'yearMonth', 'select', 'record', 'list', 'file', 'link',
] as const;
export type FieldTypeName = (typeof FIELD_TYPE_NAMES)[number];

/** A field of a user table, as stored in the metadata. */
export interface FieldDef {
  id: string;
  code: string;
  name: string;
  type: FieldTypeName;
  required: boolean;
  options: Record<string, unknown>;
}

export type ParseResult = { ok: true; value: unknown } | { ok: false; message: string };

export const ok = (value: unknown): ParseResult => ({ ok: true, value });
export const fail = (message: string): ParseResult => ({ ok: false, message });

/** The filter operators of CONTRACT §6 (without `_isNull`, which every type accepts). */
export type FilterOp = '_eq' | '_gt' | '_gte' | '_lt' | '_lte' | '_contains' | '_startsWith' | '_endsWith';

export const ORDER_OPS: readonly FilterOp[] = ['_eq', '_gt', '_gte', '_lt', '_lte'];
export const TEXT_OPS: readonly FilterOp[] = [...ORDER_OPS, '_contains', '_startsWith', '_endsWith'];

/**
 * One field type: everything the service needs to know about it lives in its module.
 * Routes, SQL and exporters ask the registry, never switch on the type name.
 */
export interface FieldType {
  name: FieldTypeName;
  /** The kind of SQL column that stores it. */
  column: ColumnKind;
  /** JSON Schema of the field's `options`. */
  optionsSchema: Record<string, unknown>;
  /** Cross-option checks JSON Schema cannot express; returns problems. */
  checkOptions?(options: Record<string, unknown>): string[];
  /** Checks a written, non-null value and returns its normalised form, or why it is wrong. */
  parse(value: unknown, field: FieldDef): ParseResult;
  /** A normalised value as the database column takes it. */
  toDb(value: unknown, codec: ValueCodec): unknown;
  /** A column value (never null) as the API returns it. */
  fromDb(raw: unknown, codec: ValueCodec): unknown;
  /** Filter values are checked as this type's written values are (a select compares as text); default itself. */
  comparisonType?: FieldTypeName;
  /** Filter operators it accepts besides `_isNull`. */
  filterOps: readonly FilterOp[];
  /** Whether it can be a sort key (and so gets a sort index). */
  sortable: boolean;
  /** A read value (never null) as the text of one CSV/TSV cell, before quoting. */
  toText(value: unknown): string;
  /** Whether toText never yields a delimiter (comma, tab), `"`, CR or LF, so its cells need no quoting test. */
  plainText?: boolean;
  /**
   * A CSV/TSV cell of an import (never empty: an empty cell is null) as the value written, which
   * `parse` then checks; the inverse of toText. Default: the text itself. Not given for a type
   * whose exported text cannot be written back (a file: its name, type and size, not the file).
   */
  fromText?(text: string): unknown;
  /** Whether an imported file may carry the field (false: it is skipped, with a warning). Default true. */
  importable?: boolean;
  /** The same text straight from a column value (never null), where that skips decoding. */
  textFromDb?(raw: unknown, codec: ValueCodec): string;
  /** The JSON text of its read value straight from a column value (never null), where that skips decoding; default: JSON.stringify(fromDb(raw)). */
  jsonFromDb?(raw: unknown, codec: ValueCodec): string;
  /** A read value (never null) as the API returns it, given how to sign its download URL (files only). */
  withLinks?(value: unknown, link: (file: StoredFile) => FileLink): unknown;
  /** The value read where the column holds null; default null (a multiple link: []). */
  nullValue?(field: FieldDef): unknown;
  /** A read value (never null) as a JSONL export line carries it; default: as read. */
  toExport?(value: unknown): unknown;
  /** JSON Schema of its value in `values` as read (and as written, unless writeSchema says otherwise), for OpenAPI. */
  valueSchema(field: FieldDef): Record<string, unknown>;
  /** JSON Schema of its value as written, where it differs from the value read. */
  writeSchema?(field: FieldDef): Record<string, unknown>;
}

/** Codecs shared by the types stored as plain text columns. */
export const textColumn = {
  toDb: (value: unknown) => value,
  fromDb: (raw: unknown) => raw,
  toText: (value: unknown) => value as string,
};

/** An imported cell of a JSON-valued type: its JSON, or the text itself when it is none (parse then says why). */
export function jsonFromText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Codecs shared by the types stored as JSON columns. */
export const jsonColumn = {
  toDb: (value: unknown, codec: ValueCodec) => codec.encodeJson(value),
  fromDb: (raw: unknown, codec: ValueCodec) => codec.decodeJson(raw),
  // Structured values are exported as their JSON text, and imported from it.
  toText: (value: unknown) => JSON.stringify(value),
  fromText: jsonFromText,
};

/** A JSON column's text as the export writes it: SQLite hands back the stored JSON text itself. */
export const jsonTextFromDb = (raw: unknown): string => (typeof raw === 'string' ? raw : JSON.stringify(raw));

export const describe = (value: unknown): string =>
  value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : `a ${typeof value}`;
