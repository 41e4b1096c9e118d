import { type FieldDef, type FieldType, textColumn } from '../domain/field-types/field-type.ts';
import { numberType } from '../domain/field-types/number.ts';
import { fieldType, nullValueOf } from '../domain/field-types/registry.ts';
import type { FileFormat } from '../domain/file-formats.ts';
import { SYSTEM_ORDER } from '../domain/row-columns.ts';
import type { Dialect } from '../store/dialect.ts';

/** The export file formats (the seed spec's "Export rows", CONTRACT §7): how one row becomes one line. */

export const FORMAT_INFO: Record<FileFormat, { contentType: string; extension: string }> = {
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
   * `expand` (jsonl): a field's value in place of its own (its linked rows' records), or undefined.
   */
  line(raw: unknown[], expand?: (fieldId: string, value: unknown) => unknown): string;
}

/** Every `"` of a cell, doubled by a global replace. */
const QUOTES = /"/g;

/** RFC 4180 quoting: a cell holding the delimiter, `"`, CR or LF is quoted, with `"` doubled. */
function cellQuoter(delimiter: ',' | '\t'): (text: string) => string {
  // One pass over the text, for the delimiter and the other three at once. The quotes are doubled
  // by a regular expression's global replace, which writes one flat string, where replaceAll with a
  // string joined the pieces into a rope the encoder then flattened (a record or list cell holds
  // a dozen quotes; docs/decisions.md, Export).
  const special = delimiter === ',' ? /[,"\r\n]/ : /[\t"\r\n]/;
  return (text) => (special.test(text) ? `"${text.replace(QUOTES, '""')}"` : text);
}

export function rowFormatter(format: FileFormat, fields: FieldDef[], newline: string, header: boolean, dialect: Dialect): RowFormatter {
  const typed: { id: string; code: string; type: FieldType; nullValue: unknown }[] = fields.map((f) => ({ id: f.id, code: f.code, type: fieldType(f.type), nullValue: nullValueOf(f) }));
  const system = SYSTEM_COLUMNS.length;
  if (format === 'jsonl') {
    return {
      header: () => '',
      line(raw, expand) {
        const values: Record<string, unknown> = {};
        typed.forEach(({ id, code, type, nullValue }, i) => {
          const v = raw[system + i];
          const expanded = expand === undefined ? undefined : expand(id, v);
          if (expanded !== undefined) values[code] = expanded;
          else if (v === null || v === undefined) values[code] = nullValue;
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
  const delimiter = format === 'csv' ? (',' as const) : ('\t' as const);
  const cell = cellQuoter(delimiter);
  const cells = typed.map(({ type }) => cellWriter(type, dialect));
  // A table's rows are mostly written by a few members: the last member id's cell is kept, not tested again.
  let lastBy: unknown;
  let lastByCell = '';
  const byCell = (by: unknown) => (by === lastBy ? lastByCell : (lastByCell = cell((lastBy = by) as string)));
  return {
    header: () => (header ? [...SYSTEM_COLUMNS, ...typed.map((f) => f.code)].map(cell).join(delimiter) + newline : ''),
    line(raw) {
      // Row ids (codes.ts ROW_ID) and timestamps never need quoting; member ids might.
      let out = `${raw[0]}${delimiter}${raw[1]}${delimiter}${raw[2]}${delimiter}${byCell(raw[3])}${delimiter}${byCell(raw[4])}`;
      // One switch over each field's kind rather than a function per field: the calls of a line were
      // a good part of its cost (docs/decisions.md, Export).
      for (let i = 0; i < cells.length; i++) {
        const v = raw[system + i];
        if (v === null || v === undefined) {
          out += delimiter;
          continue;
        }
        const { kind, text } = cells[i];
        switch (kind) {
          case CellKind.Stored:
            out += delimiter + (v as string);
            break;
          case CellKind.StoredQuoted:
            out += delimiter + cell(v as string);
            break;
          case CellKind.Number:
            out += delimiter + (typeof v === 'number' ? String(v) : text(v));
            break;
          case CellKind.Plain:
            out += delimiter + text(v);
            break;
          default:
            out += delimiter + cell(text(v));
        }
      }
      return out + newline;
    },
  };
}

const enum CellKind {
  /** The column's text is the cell's (text, select, date, dateTime: textColumn's codec). */
  Stored,
  /** The same, quoted when it needs to be. */
  StoredQuoted,
  /** A number: a column value that is a JavaScript number is written as toText writes it, String(n). */
  Number,
  /** Through the type, never quoted. */
  Plain,
  /** Through the type, quoted when it needs to be. */
  Quoted,
}

/** How the cells of one field type are written: the kind, and its text (never null) through the type. */
function cellWriter(type: FieldType, dialect: Dialect): { kind: CellKind; text: (raw: unknown) => string } {
  const { textFromDb, toText, fromDb } = type;
  const text = textFromDb ? (raw: unknown) => textFromDb(raw, dialect) : (raw: unknown) => toText(fromDb(raw, dialect));
  const stored = !textFromDb && fromDb === textColumn.fromDb && toText === textColumn.toText;
  if (stored) return { kind: type.plainText ? CellKind.Stored : CellKind.StoredQuoted, text };
  if (type === numberType) return { kind: CellKind.Number, text };
  return { kind: type.plainText ? CellKind.Plain : CellKind.Quoted, text };
}
