import { type RawBuilder, sql } from 'kysely';
import { TableMemo } from '../../domain/compiled-table.ts';
import type { TableDef } from '../../domain/table.ts';
import type { Database } from '../database.ts';
import { QueryTemplate } from '../query-template.ts';

/**
 * The statements of link maintenance and `expand` that bind lists (ids, edges) as one parameter
 * per column whatever their length (link-dialect.ts): each built once per table version and
 * purpose and, on PostgreSQL, prepared. Before, each bound its ids one by one: the query builder
 * built a statement of 1,000 values for every bulk, and PostgreSQL parsed and planned it anew.
 */

const statements = new TableMemo('link list statements, by purpose', () => new Map<string, QueryTemplate>());

/**
 * The statement `key` of the table version, built by `make` from its parameters' SQL (`arg(i)`:
 * the i-th argument of QueryTemplate.with), and prepared on PostgreSQL.
 */
export function listStatement(database: Database, table: TableDef, key: string, make: (arg: (i: number) => RawBuilder<unknown>) => RawBuilder<unknown>): QueryTemplate {
  const made = table.compiled.memo(statements);
  let t = made.get(key);
  if (!t) {
    t = QueryTemplate.build((arg) => {
      const query = make((i) => sql`${arg(i)}`);
      return { compile: () => query.compile(database.db) };
    });
    database.prepare(t.sql);
    made.set(key, t);
  }
  return t;
}

/** The SQL of the parameters `from`… of a list `width` columns wide (LinkSql.listParameters). */
export function listParams(database: Database, arg: (i: number) => RawBuilder<unknown>, width: number, from = 0): RawBuilder<unknown>[] {
  return Array.from({ length: database.dialect.links.listParameters(width) }, (_, k) => arg(from + k));
}
