import type { RawBuilder } from 'kysely';
import type { FieldType } from '../domain/field-types/field-type.ts';
import type { ColumnKind } from '../domain/value-codec.ts';
import type { RecordValueSql } from './record-value-sql.ts';

/**
 * What link maintenance and `expand` (store/links/, RowStore.followLinks) ask of each database
 * where SQLite and PostgreSQL differ (sqlite/link-statements.ts, postgres/link-statements.ts).
 *
 * A list of rows is bound as one parameter per column (PostgreSQL: an array) or as one in all
 * (SQLite: a JSON array), whatever its length: one statement text serves every size, is parsed
 * once (PostgreSQL: prepared), and binds a few values rather than thousands (a statement of 1,000
 * rows bound value by value took as long to parse and plan as to run).
 */
export interface LinkSql {
  /** How many parameters a list of rows `width` columns wide takes. */
  listParameters(width: number): number;
  /** The list's rows, given column by column (texts or nulls, each column as long as the others), as those parameters. */
  bindList(columns: readonly (readonly (string | null)[])[]): unknown[];
  /**
   * The bound list (its parameters' SQL) as a FROM item aliased `rh_list`: text columns named
   * `names`, and `rh_k`, ascending in the order of the rows. Names are written unquoted (on SQLite
   * a statement naming a quoted `"rh_…` is taken for one touching the metadata tables).
   */
  listRows(params: readonly RawBuilder<unknown>[], names: readonly string[]): RawBuilder<unknown>;
  /**
   * A link column's value with the ids of the JSON array `drop` removed and those of the JSON
   * array `add` appended (either may be null: nothing to do), as stored: null for none.
   * `multiple` false: the one id kept, the last one added where there is one. An added id is
   * looked for in the value only where `mayHold` is not null (the row's own value was written by
   * the same request: a row of a self-link pair written from both sides); elsewhere the edges
   * say it is not there, and looking would cost a search of the whole value for each id added
   * (a customer of 20,000 orders). `add` and `drop` are JSON text.
   */
  followed(current: RawBuilder<unknown>, add: RawBuilder<unknown>, drop: RawBuilder<unknown>, mayHold: RawBuilder<unknown>, multiple: boolean): RawBuilder<unknown>;
  /**
   * A link column's value as JSON text, as JSON.stringify writes it (null for none), for reads
   * that only render it (an expanded row's links): PostgreSQL's driver would parse a jsonb array
   * for the renderer to write it out again. (A row id holds no quote, comma or space: the text of
   * an array of ids differs from PostgreSQL's only by the space after each comma.)
   */
  linkJson(column: RawBuilder<unknown>): RawBuilder<unknown>;
  /**
   * Whether the database writes a value of this type in a record's JSON text (record-json-sql.ts,
   * with exactRecordValues) byte for byte as the renderer does (render/row-json.ts): an expanded
   * row whose table has only such fields is read as its record's text, rendered by the database
   * (store/links/expand.ts).
   */
  recordValueExact(type: FieldType): boolean;
  /**
   * A value's JSON text by the kind of column that holds it, exactly as the renderer writes the
   * value the driver reads, for the kinds recordValueExact admits (and the system columns). Where
   * the change log's spelling (Dialect.recordValues) is already exact, the same (a RecordValueSql).
   */
  exactRecordValues: RecordValueSql;
  /** What follows an edge table's column list in its CREATE TABLE (SQLite: WITHOUT ROWID, the primary key being the table). */
  edgeTableOptions: string;
}
