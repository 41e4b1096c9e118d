/** The row record of the seed spec: a single-row retrieval returns exactly this. */
export interface RowRecord {
  id: string;
  createdAt: string;
  updatedAt: string;
  createdBy: string | null;
  updatedBy: string | null;
  values: Record<string, unknown>;
}

/** A row as the database returns it: physical column names (system columns, then f_<field id>). */
export type RawRow = Record<string, unknown>;
