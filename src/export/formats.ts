import type { FieldDef, FieldType } from '../domain/field-types/field-type.ts';
import { fieldType } from '../domain/field-types/registry.ts';
import { SYSTEM_ORDER } from '../domain/row-columns.ts';
import type { Dialect } from '../store/dialect.ts';

/** The export file formats (the seed spec's "Export rows", CONTRACT §7): how one row becomes one line. */

export const EXPORT_FORMATS = ['csv', 'tsv', 'jsonl'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export const FORMAT_INFO: Record<ExportFormat, { contentType: string; extension: string }> = {
  csv: { contentType: 'text/csv', extension: 'csv' },
  tsv: { contentType: 'text/tab-separated-values', extension: 'tsv' },
  jsonl: { contentType: 'application/x-ndjson', extension: 'jsonl' },
};

const SYSTEM_COLUMNS = SYSTEM_ORDER.map((c) => c.key);

export interface RowFormatter {
  /** The header line (with its newline), or '' when there is none. */
  header(): string;
  /**
   * One row as one line, with its newline. The row is the column values as the database returns
   * them: the system columns, then the fields in order (RowStore.columns).
   */
  line(raw: unknown[]): string;
}

/** RFC 4180 quoting: a cell holding the delimiter, `"`, CR or LF is quoted, with `"` doubled. */
function quoteCell(text: string, delimiter: string): string {
  if (!text.includes(delimiter) && !/["\r\n]/.test(text)) return text;
  return `"${text.replace(/"/g, '""')}"`;
}

export function rowFormatter(format: ExportFormat, fields: FieldDef[], newline: string, header: boolean, dialect: Dialect): RowFormatter {
  const typed: { code: string; type: FieldType }[] = fields.map((f) => ({ code: f.code, type: fieldType(f.type) }));
  const system = SYSTEM_COLUMNS.length;
  if (format === 'jsonl') {
    return {
      header: () => '',
      line(raw) {
        const values: Record<string, unknown> = {};
        typed.forEach(({ code, type }, i) => {
          const v = raw[system + i];
          if (v === null || v === undefined) values[code] = null;
          else {
            const value = type.fromDb(v, dialect);
            values[code] = type.toExport ? type.toExport(value) : value;
          }
        });
        // The shape of a single-row retrieval (GET /rows/{id}).
        return JSON.stringify({ id: raw[0], createdAt: raw[1], updatedAt: raw[2], createdBy: raw[3], updatedBy: raw[4], values }) + newline;
      },
    };
  }
  const delimiter = format === 'csv' ? ',' : '\t';
  const cell = (text: string) => quoteCell(text, delimiter);
  const texts = typed.map(({ type }) => (v: unknown) => (type.textFromDb ? type.textFromDb(v, dialect) : type.toText(type.fromDb(v, dialect))));
  return {
    header: () => (header ? [...SYSTEM_COLUMNS, ...typed.map((f) => f.code)].map(cell).join(delimiter) + newline : ''),
    line(raw) {
      // Timestamps never need quoting; ids and member ids might.
      let out = `${cell(raw[0] as string)}${delimiter}${raw[1]}${delimiter}${raw[2]}${delimiter}${cell(raw[3] as string)}${delimiter}${cell(raw[4] as string)}`;
      for (let i = 0; i < texts.length; i++) {
        const v = raw[system + i];
        out += delimiter + (v === null || v === undefined ? '' : cell(texts[i](v)));
      }
      return out + newline;
    },
  };
}
