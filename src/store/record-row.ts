import { isLinkField } from '../domain/field-types/link.ts';
import type { RawRow, RowRecord } from '../domain/row.ts';
import type { TableDef } from '../domain/table.ts';
import type { ValueCodec } from '../domain/value-codec.ts';

/**
 * A written row made from its record's JSON text (as the database rendered it for the row's change
 * entry: record-json-sql.ts), for a write whose statement returns that text rather than the row's
 * columns (PostgreSQL's single-row update: postgres/change-numbering.ts). Each value is bound as a
 * create binds it (RowStore.newRow, the field type's toDb), and a row so bound decodes and renders
 * as the row read back does (the create's answer relies on the same: RowStore.boundRow).
 * test/store/record-json-sql.test.ts holds the database's record to the JavaScript one, value for
 * value; test/http/rows-patch-answer.test.ts a patch's answer to the row read back, text for text.
 */

/**
 * Whether the table's written rows can be made from their records: not where a value's record
 * differs from what the column holds (a file's record has no storage key; a link's answer may be
 * expanded from the column), so those keep their columns.
 */
export function rowFromRecordFits(table: TableDef): boolean {
  return !table.hasFiles && !table.fields.some(isLinkField);
}

/** The row the record `text` renders (rowFromRecordFits tables only), its values bound for `codec`'s database. */
export function rowFromRecord(table: TableDef, text: string, codec: ValueCodec): RawRow {
  const record = JSON.parse(text) as RowRecord;
  const row: RawRow = {
    id: record.id,
    created_at: record.createdAt,
    updated_at: record.updatedAt,
    created_by: record.createdBy,
    updated_by: record.updatedBy,
  };
  const { values } = record;
  for (const { code, column, type } of table.compiled.fields) {
    const v = values[code];
    row[column] = v === null || v === undefined ? null : type.toDb(v, codec);
  }
  return row;
}
