import { fieldType } from '../domain/field-types/registry.ts';
import { fieldColumn } from '../domain/row-columns.ts';
import type { ColumnKind } from '../domain/value-codec.ts';
import type { TableDef } from '../store/table-catalog.ts';

/**
 * PostgreSQL: a row record's JSON text as an SQL expression over the row's columns, for the change
 * entry that the statement writing a row also writes (one round trip, where rendering it here in
 * JavaScript would need the row first). It reads as recordJson's text (row-json.ts) does, value for
 * value; only JSON values (list, record, file) keep PostgreSQL's spacing. The test
 * test/render/row-json-sql.test.ts holds the two to each other, type by type.
 */

/** A literal SQL string. */
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** A non-null column value's JSON text, by the kind of column that holds it. */
const VALUE: Record<ColumnKind, (column: string) => string> = {
  text: (c) => `to_json(${c})::text`,
  // The shortest decimal that reads back exactly, as JavaScript writes it (-0 is never stored: pg binds it as 0).
  real: (c) => `to_json(${c})::text`,
  integer: (c) => `to_json(${c})::text`,
  boolean: (c) => `to_json(${c})::text`,
  // The API's form, as the pg driver's parser makes it (database.ts): milliseconds and Z.
  timestamp: (c) => `'"' || to_char(${c} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"'`,
  date: (c) => `to_json(${c})::text`,
  time: (c) => `to_json(${c})::text`,
  json: (c) => `${c}::text`,
};

const expressions = new WeakMap<TableDef, Map<string, string>>();

/** The record of the row `alias` names (a table or a WITH query holding every column), made once per table version. */
export function recordJsonSql(table: TableDef, alias: string): string {
  let byAlias = expressions.get(table);
  if (!byAlias) {
    byAlias = new Map();
    expressions.set(table, byAlias);
  }
  let expr = byAlias.get(alias);
  if (expr === undefined) {
    const col = (name: string) => `${alias}."${name}"`;
    const parts = [
      literal('{"id":'), VALUE.text(col('id')),
      literal(',"createdAt":'), VALUE.timestamp(col('created_at')),
      literal(',"updatedAt":'), VALUE.timestamp(col('updated_at')),
      literal(',"createdBy":'), VALUE.text(col('created_by')),
      literal(',"updatedBy":'), VALUE.text(col('updated_by')),
      literal(',"values":{'),
    ];
    table.fields.forEach((f, i) => {
      const c = col(fieldColumn(f.id));
      parts.push(literal(`${i === 0 ? '' : ','}${JSON.stringify(f.code)}:`), `coalesce(${VALUE[fieldType(f.type).column](c)}, 'null')`);
    });
    parts.push(literal('}}'));
    expr = parts.join(' || ');
    byAlias.set(alias, expr);
  }
  return expr;
}
