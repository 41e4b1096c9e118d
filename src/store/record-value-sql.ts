import type { ColumnKind } from '../domain/value-codec.ts';

/** A non-null column value's JSON text as SQL, by the kind of column that holds it (record-json-sql.ts), and how a record's parts are joined. */
export type RecordValueSql = Record<ColumnKind, (column: string) => string> & {
  /** SQL expressions, none of them null, joined into one text (record-json-sql.ts). */
  joined(parts: readonly string[]): string;
};
