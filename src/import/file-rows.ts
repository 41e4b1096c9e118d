import type { FieldDef } from '../domain/field-types/field-type.ts';
import { fieldType } from '../domain/field-types/registry.ts';
import { isObject } from '../domain/json.ts';
import { isSystemColumn } from '../domain/row-columns.ts';
import type { FileFormat } from '../domain/file-formats.ts';
import { type FileRecord, fileProblem } from './read-file.ts';
import type { TableDef } from '../domain/table.ts';
import type { FileRow } from '../domain/row.ts';

/**
 * An imported file's records as row bodies `{id?, values}`, in the shapes rows-export writes: a
 * CSV/TSV header names the columns by field code, `id` is optional, the other system columns are
 * ignored, an empty cell is null, record and list cells are JSON; a JSONL line is a row record.
 * Columns of fields an import cannot fill (files) are skipped, with one warning each.
 */

export class FileRows {
  readonly warnings: string[] = [];
  /** CSV/TSV: what each column holds, from the header. */
  private columns: ({ kind: 'id' } | { kind: 'skip' } | { kind: 'field'; field: FieldDef; fromText: ((text: string) => unknown) | undefined })[] | null = null;
  private readonly skipped = new Set<string>();

  constructor(
    private readonly table: TableDef,
    private readonly format: FileFormat,
  ) {}

  private skip(code: string): void {
    if (this.skipped.has(code)) return;
    this.skipped.add(code);
    this.warnings.push(`${code}: a file field is not imported (an export carries the file's name, type and size, not the file); its column was skipped`);
  }

  /** The row a record makes, or null for the header line. */
  row(record: FileRecord): FileRow | null {
    if ('json' in record) return this.jsonRow(record.line, record.json);
    if (!this.columns) {
      this.columns = this.header(record.line, record.cells);
      return null;
    }
    const values: Record<string, unknown> = {};
    let id: string | undefined;
    const { columns } = this;
    const { cells } = record;
    for (let i = 0; i < columns.length; i++) {
      const column = columns[i];
      const cell = cells[i];
      if (column.kind === 'id') id = cell === '' ? undefined : cell;
      else if (column.kind === 'field') values[column.field.code] = cell === '' ? null : column.fromText ? column.fromText(cell) : cell;
    }
    return { line: record.line, body: id === undefined ? { values } : { id, values } };
  }

  /** The rows a batch of records makes (the header line makes none). */
  rows(records: FileRecord[]): FileRow[] {
    const rows: FileRow[] = [];
    for (const record of records) {
      const row = this.row(record);
      if (row) rows.push(row);
    }
    return rows;
  }

  /** Whether the file had a header: a CSV/TSV file without one has no columns at all. */
  get hasHeader(): boolean {
    return this.format === 'jsonl' || this.columns !== null;
  }

  private header(line: number, cells: string[]): NonNullable<FileRows['columns']> {
    const seen = new Set<string>();
    return cells.map((code) => {
      if (seen.has(code)) throw fileProblem(line, `column ${code} appears twice in the header`);
      seen.add(code);
      if (code === 'id') return { kind: 'id' } as const;
      if (isSystemColumn(code)) return { kind: 'skip' } as const;
      const field = this.table.fieldsByCode.get(code);
      if (!field) throw fileProblem(line, `column ${JSON.stringify(code)} is not a field of this table (the header names columns by field code)`);
      if (fieldType(field.type).importable === false) {
        this.skip(code);
        return { kind: 'skip' } as const;
      }
      return { kind: 'field', field, fromText: fieldType(field.type).fromText } as const;
    });
  }

  private jsonRow(line: number, json: unknown): FileRow {
    if (!isObject(json)) throw fileProblem(line, 'must be a JSON object, a row record as rows-export writes it');
    const unknown = Object.keys(json).find((k) => k !== 'values' && !isSystemColumn(k));
    if (unknown !== undefined) throw fileProblem(line, `${unknown} is not a key of a row record (id, createdAt, updatedAt, createdBy, updatedBy, values)`);
    if (!isObject(json.values)) throw fileProblem(line, 'values must be an object of field codes');
    const values: Record<string, unknown> = {};
    for (const [code, value] of Object.entries(json.values)) {
      const field = this.table.fieldsByCode.get(code);
      if (field && fieldType(field.type).importable === false) this.skip(code);
      else values[code] = value;
    }
    return { line, body: json.id === undefined ? { values } : { id: json.id, values } };
  }
}
