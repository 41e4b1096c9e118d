/** The kinds of SQL column a field type can be stored in; the store's dialect maps each to its own SQL type. */
export type ColumnKind = 'text' | 'real' | 'integer' | 'boolean' | 'timestamp' | 'date' | 'time' | 'json';

/**
 * How values are bound to the database and read back where the databases differ: what a field
 * type needs to store its values. The store's Dialect is one.
 */
export interface ValueCodec {
  encodeBoolean(v: boolean): unknown;
  decodeBoolean(v: unknown): boolean;
  encodeJson(v: unknown): unknown;
  decodeJson(v: unknown): unknown;
}
