import type { FieldDef, FieldType } from '../domain/field-types/field-type.ts';
import { fieldType } from '../domain/field-types/registry.ts';
import type { RowRecord } from '../store/rows.ts';

/** The export file formats (the seed spec's "Export rows", CONTRACT §7): how one row becomes one line. */

export const EXPORT_FORMATS = ['csv', 'tsv', 'jsonl'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export const FORMAT_INFO: Record<ExportFormat, { contentType: string; extension: string }> = {
  csv: { contentType: 'text/csv', extension: 'csv' },
  tsv: { contentType: 'text/tab-separated-values', extension: 'tsv' },
  jsonl: { contentType: 'application/x-ndjson', extension: 'jsonl' },
};

const SYSTEM_COLUMNS = ['id', 'createdAt', 'updatedAt', 'createdBy', 'updatedBy'] as const;

export interface RowFormatter {
  /** The header line (with its newline), or '' when there is none. */
  header(): string;
  /** One record as one line, with its newline. */
  line(row: RowRecord): string;
}

/** RFC 4180 quoting: a cell holding the delimiter, `"`, CR or LF is quoted, with `"` doubled. */
export function quoteCell(text: string, delimiter: string): string {
  if (!text.includes(delimiter) && !/["\r\n]/.test(text)) return text;
  return `"${text.replace(/"/g, '""')}"`;
}

export function rowFormatter(format: ExportFormat, fields: FieldDef[], newline: string, header: boolean): RowFormatter {
  const typed: { code: string; type: FieldType }[] = fields.map((f) => ({ code: f.code, type: fieldType(f.type) }));
  if (format === 'jsonl') {
    return {
      header: () => '',
      line(row) {
        const values: Record<string, unknown> = {};
        for (const { code, type } of typed) {
          const v = row.values[code];
          values[code] = v === null || !type.toExport ? v : type.toExport(v);
        }
        return JSON.stringify({ ...row, values }) + newline;
      },
    };
  }
  const delimiter = format === 'csv' ? ',' : '\t';
  const cell = (text: string) => quoteCell(text, delimiter);
  return {
    header: () => (header ? [...SYSTEM_COLUMNS, ...typed.map((f) => f.code)].map(cell).join(delimiter) + newline : ''),
    line(row) {
      let out = `${cell(row.id)}${delimiter}${row.createdAt}${delimiter}${row.updatedAt}${delimiter}${cell(row.createdBy)}${delimiter}${cell(row.updatedBy)}`;
      for (const { code, type } of typed) {
        const v = row.values[code];
        out += delimiter + (v === null ? '' : cell(type.toText(v)));
      }
      return out + newline;
    },
  };
}
