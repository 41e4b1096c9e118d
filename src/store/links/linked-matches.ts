import { sql } from 'kysely';
import { tableName } from '../../domain/row-columns.ts';
import type { LinkFilter, RowFilter } from '../../domain/row-filter.ts';
import { type LinkQuantifier, type LinkedMatches, linkQuantifiers, linkedIds } from '../../domain/row-filter-match.ts';
import type { RowRecord } from '../../domain/row.ts';
import { type Database, type Db, readRows } from '../database.ts';
import { compileFilter } from '../row-sql.ts';

/** Ids judged per statement. */
const PER_READ = 1000;

/**
 * What a filter judged in memory needs of the linked rows (a change stream's filter, CONTRACT §14,
 * which keeps a change whose row matches before or after it, with §11's `_some`, `_none` and
 * `_every`): for each such condition, the rows the given records link to through its field, as
 * they are now, each with whether it meets the condition's filter. The database judges them, with
 * the condition's filter as SQL (compileFilter: the links nested in it followed there too), the ids
 * bound as one list (link-dialect.ts), one statement per condition and 1,000 ids. Records that
 * link to nothing through a condition's field cost it no statement. `db`: where to read them (a
 * flow's planning reads them in its own transaction, events/delivery-store.ts).
 */
export async function linkedMatches(database: Database, filter: RowFilter, records: readonly RowRecord[], db: Db = database.db): Promise<LinkedMatches> {
  const out = new Map<LinkFilter, Map<string, boolean>>();
  for (const condition of linkQuantifiers(filter)) {
    const ids = new Set<string>();
    for (const record of records) for (const id of linkedIds(record.values[condition.target.key])) ids.add(id);
    out.set(condition, await judged(database, db, condition, [...ids]));
  }
  return out;
}

async function judged(database: Database, db: Db, condition: LinkQuantifier, ids: readonly string[]): Promise<Map<string, boolean>> {
  const { dialect } = database;
  const rows = new Map<string, boolean>();
  // The linked rows are aliased as a list's are at its first link (link-sql.ts), so that links nested in the filter name theirs one level further.
  const meets = compileFilter(condition.filter, dialect, 'l1_t', 1);
  for (let i = 0; i < ids.length; i += PER_READ) {
    const params = dialect.links.bindList([ids.slice(i, i + PER_READ)]).map((p) => sql`${p}`);
    // Unquoted rh_ names (link-dialect.ts, listRows).
    const query = sql<{ rh_id: string; rh_meets: number }>`select l1_t.id as rh_id, case when ${meets} then 1 else 0 end as rh_meets
      from ${sql.table(tableName(condition.table))} as l1_t where l1_t.id in (select rh_id from ${dialect.links.listRows(params, ['rh_id'])})`;
    for (const r of (await readRows(db, query.compile(db))) as { rh_id: string; rh_meets: number | string }[]) rows.set(r.rh_id, Number(r.rh_meets) === 1);
  }
  return rows;
}
