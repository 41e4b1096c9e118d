import type { FileFormat, TextEncoding } from '../domain/file-formats.ts';
import type { ExportQuery } from '../domain/requests/export-query.ts';
import type { RowSelection } from '../domain/requests/row-list-query.ts';
import type { TableDef } from '../domain/table.ts';
import type { FieldDef } from '../domain/field-types/field-type.ts';

/** Rows per chunk: memory holds about one chunk whatever the table size, and other requests run between chunks. */
const EXPORT_CHUNK_ROWS = 1000;

/** Every row of a selection as one file (GET /rows-export): read in chunks, streamed as they are formatted. */
export interface ExportPlan {
  kind: 'export';
  table: TableDef;
  selection: RowSelection;
  /** At most this many rows; null: all. */
  limit: number | null;
  /** Rows read at a time. */
  chunk: number;
  format: FileFormat;
  encoding: TextEncoding;
  newline: '\r\n' | '\n';
  header: boolean;
  /** Link fields each jsonl line carries the linked rows of (`expand`). */
  expand: FieldDef[];
}

const NEWLINE_TEXT = { crlf: '\r\n', lf: '\n' } as const;

/** GET /rows-export: the file the query asks for. */
export function planExport(table: TableDef, q: ExportQuery): ExportPlan {
  const { selection, limit, format, encoding, header, expand } = q;
  return { kind: 'export', table, selection, limit, chunk: EXPORT_CHUNK_ROWS, format, encoding, newline: NEWLINE_TEXT[q.newline], header, expand };
}
