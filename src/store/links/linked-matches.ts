import { sql } from 'kysely';
import { tableName } from '../../domain/row-columns.ts';
import type { LinkFilter, RowFilter } from '../../domain/row-filter.ts';
import { type LinkQuantifier, type LinkedMatches, type LinkedRows, linkQuantifiers, linkedIds } from '../../domain/row-filter-match.ts';
import type { RowRecord } from '../../domain/row.ts';
import { type Database, type Db, readRows } from '../database.ts';
import { compileFilter } from '../row-sql.ts';

/**
 * Ids judged per statement: as many as a row's links commonly hold, in one. In parts of 1,000, a
 * customer of 20,000 orders cost 20 statements a read, each of which PostgreSQL answered by a scan
 * of the orders (a hash join being cheaper than 1,000 lookups there): twenty scans where one does.
 */
const PER_READ = 50_000;

/**
 * What a filter judged in memory needs of the linked rows (a change stream's filter, CONTRACT §14,
 * which keeps a change whose row matches before or after it, with §11's `_some`, `_none` and
 * `_every`; a flow's trigger): for each such condition, of the rows the given records link to
 * through its field, those that meet the condition's filter and those no longer there, as they are
 * now (the others are there and do not meet it). The database judges them, with the condition's
 * filter as SQL (compileFilter: the links nested in it followed there too), the ids bound as one
 * list (link-dialect.ts), one statement per condition (and 50,000 ids), and answers only those two
 * kinds: a customer of 20,000 orders of which none meets the filter is answered by no row, not
 * 20,000. Records that link to nothing through a condition's field cost it no statement. `db`:
 * where to read them (a flow's planning reads them in its own transaction, events/delivery-store.ts).
 */
export async function linkedMatches(database: Database, filter: RowFilter, records: readonly RowRecord[], db: Db = database.db): Promise<LinkedMatches> {
  const out = new Map<LinkFilter, LinkedRows>();
  for (const condition of linkQuantifiers(filter)) {
    const ids = new Set<string>();
    for (const record of records) for (const id of linkedIds(record.values[condition.target.key])) ids.add(id);
    out.set(condition, ids.size === 0 ? { meeting: new Set(), gone: new Set() } : await judged(database, db, condition, [...ids]));
  }
  return out;
}

async function judged(database: Database, db: Db, condition: LinkQuantifier, ids: readonly string[]): Promise<LinkedRows> {
  const { dialect } = database;
  const rows: LinkedRows = { meeting: new Set(), gone: new Set() };
  // The linked rows are aliased as a list's are at its first link (link-sql.ts), so that links nested in the filter name theirs one level further.
  const meets = compileFilter(condition.filter, dialect, 'l1_t', 1);
  for (let i = 0; i < ids.length; i += PER_READ) {
    const params = dialect.links.bindList([ids.slice(i, i + PER_READ)]).map((p) => sql`${p}`);
    // Unquoted rh_ names (link-dialect.ts, listRows). A row not there is null-extended, and meets nothing.
    const query = sql<{ rh_id: string; rh_there: number }>`select rh_list.rh_id as rh_id, case when l1_t.id is null then 0 else 1 end as rh_there
      from ${dialect.links.listRows(params, ['rh_id'])} left join ${sql.table(tableName(condition.table))} as l1_t on l1_t.id = rh_list.rh_id
      where l1_t.id is null or (${meets})`;
    for (const r of (await readRows(db, query.compile(db))) as { rh_id: string; rh_there: number | string }[]) (Number(r.rh_there) === 1 ? rows.meeting : rows.gone).add(r.rh_id);
  }
  return rows;
}
