import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { parseSelection } from '../../src/domain/requests/row-list-query.ts';
import { type Database, readRows } from '../../src/store/database.ts';
import { RowStore } from '../../src/store/rows.ts';
import { TableCatalog } from '../../src/store/table-catalog.ts';

/**
 * The plan the database makes for the first page of a list, as the service asks for it: on SQLite
 * the EXPLAIN QUERY PLAN details joined with ' | ', read on the service's read connection; on
 * PostgreSQL EXPLAIN (FORMAT JSON) as text. `prepare` runs first in the same transaction on
 * PostgreSQL (e.g. `set local enable_seqscan = off`, to ask whether an index can serve at all).
 */
export async function pagePlan(database: Database, table: string, params: { filter?: unknown; sort?: unknown }, prepare?: string): Promise<string> {
  const def = await new TableCatalog(database).find(database.db, table);
  assert.ok(def, `table ${table}`);
  const details: never[] = [];
  const text = (v: unknown) => (v === undefined ? undefined : JSON.stringify(v));
  const selection = parseSelection({ filter: text(params.filter), sort: text(params.sort) }, def, details);
  assert.deepEqual(details, []);
  const query = new RowStore(database).pageQuery(database.db, def, { filter: selection.filter, keys: selection.keys, after: null, limit: 51 });
  if (database.dialect.name === 'sqlite') {
    const rows = await readRows(database.db, { sql: `explain query plan ${query.sql}`, parameters: query.parameters });
    return rows.map((r) => r.detail).join(' | ');
  }
  // EXPLAIN takes no parameters: the values are written in as literals.
  const literal = (v: unknown) => (typeof v === 'number' ? String(v) : `'${String(v).replace(/'/g, "''")}'`);
  const explain = `explain (format json) ${query.sql.replace(/\$(\d+)/g, (_, i) => literal(query.parameters[Number(i) - 1]))}`;
  return database.db.transaction().execute(async (tx) => {
    if (prepare) await sql.raw(prepare).execute(tx);
    return JSON.stringify((await sql.raw(explain).execute(tx)).rows);
  });
}
