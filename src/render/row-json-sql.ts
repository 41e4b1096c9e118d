import { fieldType } from '../domain/field-types/registry.ts';
import { fieldColumn } from '../domain/row-columns.ts';
import type { ColumnKind } from '../domain/value-codec.ts';
import type { DialectName } from '../store/dialect.ts';
import type { TableDef } from '../domain/table.ts';
import { TableMemo } from '../domain/compiled-table.ts';

/**
 * A row record's JSON text as an SQL expression over the row's columns, for the change entries a
 * statement writes beside the rows it writes (ChangeLog): the database renders them from the rows
 * it holds, where rendering them in JavaScript would need the rows first, or would send each
 * record's text back to the database. It reads as recordJson's text (row-json.ts) does, value for
 * value; numbers and JSON values (list, record, file) may be spelled differently (`2.0`, PostgreSQL's
 * spacing). The test test/render/row-json-sql.test.ts holds the two to each other, type by type.
 */

/** A literal SQL string. */
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** A non-null column value's JSON text, by database and the kind of column that holds it. */
const VALUE: Record<DialectName, Record<ColumnKind, (column: string) => string>> = {
  postgres: {
    text: (c) => `to_json(${c})::text`,
    // The shortest decimal that reads back exactly, as JavaScript writes it (-0 is never stored: pg binds it as 0).
    // As to_json writes them (the type's output function; JSON has no NaN or infinity to store), for less.
    real: (c) => `${c}::text`,
    integer: (c) => `${c}::text`,
    boolean: (c) => `${c}::text`,
    // The API's form, as the pg driver's parser makes it (database.ts): milliseconds and Z.
    timestamp: (c) => `'"' || to_char(${c} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"'`,
    date: (c) => `to_json(${c})::text`,
    time: (c) => `to_json(${c})::text`,
    json: (c) => `${c}::text`,
  },
  sqlite: {
    // json_quote writes a real with as many digits as read it back exactly (2 as 2.0).
    text: (c) => `json_quote(${c})`,
    real: (c) => `json_quote(${c})`,
    integer: (c) => `json_quote(${c})`,
    boolean: (c) => `case ${c} when 1 then 'true' when 0 then 'false' end`,
    // Dates and times are kept as the API writes them.
    timestamp: (c) => `json_quote(${c})`,
    date: (c) => `json_quote(${c})`,
    time: (c) => `json_quote(${c})`,
    // The JSON text as the service wrote it.
    json: (c) => c,
  },
};

/**
 * Parts joined with ||, as a balanced tree: SQLite refuses an expression nested more than 1,000
 * deep, which a chain of || over a table of a few hundred fields would be.
 */
function concat(parts: string[]): string {
  if (parts.length <= 8) return parts.join(' || ');
  const half = Math.ceil(parts.length / 2);
  return `(${concat(parts.slice(0, half))}) || (${concat(parts.slice(half))})`;
}

const expressions = new TableMemo('record JSON SQL expressions, by dialect, alias and system text', () => new Map<string, string>());

/**
 * The record of the row `alias` names (a table or a WITH query holding every column), made once per
 * table version. `system`: an SQL expression (a bound parameter) holding the text the record has
 * between its id and its first value, where every row is a new one of one write (row-json.ts
 * newRowSystemJson): the database then renders only the id and the values, the larger part of its
 * work on a bulk create's entries.
 */
export function recordJsonSql(table: TableDef, alias: string, dialect: DialectName, system?: string): string {
  const made = table.compiled.memo(expressions);
  const key = `${dialect}:${alias}:${system ?? ''}`;
  let expr = made.get(key);
  if (expr === undefined) {
    const value = VALUE[dialect];
    const col = (name: string) => `${alias}."${name}"`;
    const parts = [literal('{"id":'), value.text(col('id'))];
    if (system !== undefined) parts.push(system);
    else {
      parts.push(
        literal(',"createdAt":'), value.timestamp(col('created_at')),
        literal(',"updatedAt":'), value.timestamp(col('updated_at')),
        literal(',"createdBy":'), value.text(col('created_by')),
        literal(',"updatedBy":'), value.text(col('updated_by')),
        literal(',"values":{'),
      );
    }
    table.fields.forEach((f, i) => {
      const c = col(fieldColumn(f.id));
      parts.push(literal(`${i === 0 ? '' : ','}${JSON.stringify(f.code)}:`), `coalesce(${value[fieldType(f.type).column](c)}, 'null')`);
    });
    parts.push(literal('}}'));
    expr = concat(parts);
    made.set(key, expr);
  }
  return expr;
}
