import type { Dialect } from './dialect.ts';
import type { TableDef } from '../domain/table.ts';
import { TableMemo } from '../domain/compiled-table.ts';

/**
 * A row record's JSON text as an SQL expression over the row's columns, for the change entries a
 * statement writes beside the rows it writes (ChangeLog): the database renders them from the rows
 * it holds, where rendering them in JavaScript would need the rows first, or would send each
 * record's text back to the database. It reads as recordJson's text (row-json.ts) does, value for
 * value; numbers and JSON values (list, record, file) may be spelled differently (`2.0`, PostgreSQL's
 * spacing). Each value's expression is its database's (the dialect's recordValues). The test test/store/record-json-sql.test.ts holds the two to each other, type by type.
 */

/** A literal SQL string. */
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/**
 * Parts joined with ||, as a balanced tree (PostgreSQL's RecordValueSql.joined): a chain of || over
 * a table of a few hundred fields would nest as deep.
 */
export function joinedByOperator(parts: readonly string[]): string {
  if (parts.length <= 8) return parts.join(' || ');
  const half = Math.ceil(parts.length / 2);
  return `(${joinedByOperator(parts.slice(0, half))}) || (${joinedByOperator(parts.slice(half))})`;
}

const expressions = new TableMemo('record JSON SQL expressions, by dialect, alias and system text', () => new Map<string, string>());

/**
 * The record of the row `alias` names (a table or a WITH query holding every column), made once per
 * table version. `system`: an SQL expression (a bound parameter) holding the text the record has
 * between its id and its first value, where every row is a new one of one write (domain/record-system-json.ts
 * newRowSystemJson): the database then renders only the id and the values, the larger part of its
 * work on a bulk create's entries.
 */
export function recordJsonSql(table: TableDef, alias: string, dialect: Dialect, system?: string): string {
  return recordSql(table, alias, dialect, system, false);
}

/**
 * The record's JSON text byte for byte as the renderer writes the row the driver reads (an
 * expanded row's, store/links/expand.ts): with the dialect's exact values (LinkSql.exactRecordValues),
 * for a table whose every field LinkSql.recordValueExact admits.
 */
export function exactRecordJsonSql(table: TableDef, alias: string, dialect: Dialect): string {
  return recordSql(table, alias, dialect, undefined, true);
}

function recordSql(table: TableDef, alias: string, dialect: Dialect, system: string | undefined, exact: boolean): string {
  const made = table.compiled.memo(expressions);
  const key = `${dialect.label}:${alias}:${system ?? ''}:${exact ? 'exact' : ''}`;
  let expr = made.get(key);
  if (expr === undefined) {
    const value = exact ? dialect.links.exactRecordValues : dialect.recordValues;
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
    table.compiled.fields.forEach((f, i) => {
      const c = col(f.column);
      parts.push(literal(`${i === 0 ? '' : ','}${JSON.stringify(f.code)}:`), `coalesce(${value[f.type.column](c)}, ${literal(f.nullJson)})`);
    });
    parts.push(literal('}}'));
    expr = value.joined(parts);
    made.set(key, expr);
  }
  return expr;
}
