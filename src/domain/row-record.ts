import type { RawRow, RowRecord } from './row.ts';
import type { TableDef } from './table.ts';
import type { ValueCodec } from './value-codec.ts';

/** A row's record (the seed spec's single-row shape) from the columns the database returned, each value decoded by its field's type. */
export function rowRecord(table: TableDef, raw: RawRow, codec: ValueCodec): RowRecord {
  const values: Record<string, unknown> = {};
  for (const f of table.compiled.fields) {
    const v = raw[f.column];
    values[f.code] = v === null || v === undefined ? f.nullValue : f.type.fromDb(v, codec);
  }
  return {
    id: raw.id,
    createdAt: raw.created_at,
    updatedAt: raw.updated_at,
    createdBy: raw.created_by,
    updatedBy: raw.updated_by,
    values,
  };
}

/**
 * Whether a column of the row holds JSON as text (SQLite's record, list and link columns), which
 * a field type writes out as it is (jsonFromDb) rather than decode it only to encode it again.
 */
export function holdsJsonText(table: TableDef, raw: RawRow): boolean {
  for (const f of table.compiled.fields) if (f.type.jsonFromDb !== undefined && typeof raw[f.column] === 'string') return true;
  return false;
}
