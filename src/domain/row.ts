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

/**
 * A row as the database returns it: physical column names, the system columns typed, then
 * f_<field id> (decoded by the field's type). Timestamps are ISO strings on both databases (the
 * pg driver's parser makes them so: store/database.ts). A statement may return more (an upsert's
 * `inserted`); a delete's RETURNING holds the id only (store/change-log.ts changeOf).
 */
export interface RawRow {
  id: string;
  created_at: string;
  updated_at: string;
  created_by: string | null;
  updated_by: string | null;
  [column: string]: unknown;
}
