/** The row record of the seed spec: a single-row retrieval returns exactly this. */
export interface RowRecord {
  id: string;
  createdAt: string;
  updatedAt: string;
  createdBy: string | null;
  updatedBy: string | null;
  values: Record<string, unknown>;
}

/** A row read from an imported file (import/file-rows.ts): the line it starts on, and its body `{id?, values}`. */
export interface FileRow {
  line: number;
  body: { id?: unknown; values: Record<string, unknown> };
}

/** A row as the database returns it: physical column names (system columns, then f_<field id>). */
export type RawRow = Record<string, unknown>;
