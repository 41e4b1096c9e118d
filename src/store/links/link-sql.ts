import { type RawBuilder, type SqlBool, sql } from 'kysely';
import { edgesOf } from '../../domain/field-types/link.ts';
import { tableName } from '../../domain/row-columns.ts';
import type { LinkFilter, RowFilter } from '../../domain/row-filter.ts';
import type { Dialect } from '../dialect.ts';

/**
 * A link filter as SQL (CONTRACT §11): a semi-join through the link's edge table, so the database
 * answers it from the edge indexes (primary key (src, dst), index (dst, src): docs/indexes.md)
 * and never hands rows to the service to judge. `row` names the table of the row the filter is
 * about; the linked rows get aliases of their own level (`l1_t`, `l1_e`, …), so a filter nested
 * through links (a self-link too) names each row it means. Inside, the linked table's columns are
 * named bare: its alias is the innermost that has them (edge tables have only `src` and `dst`).
 *
 * `keySet` (given for the first `_has`/`_eq` that every row answered must meet): written so that
 * the database starts from the rows linking to that row (Dialect.inKeySet). Elsewhere (a second
 * one, under `_or` or `_not`, inside another link's filter) a set membership the database may
 * probe per row (an array it would search once per row).
 */
export function compileLinkFilter(
  f: LinkFilter,
  row: string,
  level: number,
  inner: (filter: RowFilter, alias: string) => RawBuilder<SqlBool>,
  keySet: Dialect | null,
): RawBuilder<SqlBool> {
  const edges = edgesOf(f.target.field);
  const e = `l${level + 1}_e`;
  const mine = sql.ref(`${e}.${edges.mine}`);
  const other = sql.ref(`${e}.${edges.other}`);
  const owner = sql.ref(`${row}.id`);
  const from = sql`${sql.table(edges.table)} as ${sql.id(e)}`;
  if (f.mode === 'linksTo') {
    // The rows linking to one row: read from the edge index on `other` (the primary key or the
    // reverse index). As an EXISTS probed from each row in the list's order, a page of the 20,000
    // orders of one customer that lie last in that order read the 180,000 before them first.
    const linking = sql`select ${mine} from ${from} where ${other} = ${f.id}`;
    return keySet ? keySet.inKeySet(owner, linking) : sql<SqlBool>`${owner} in (${linking})`;
  }
  const t = `l${level + 1}_t`;
  const join = sql`${from} join ${sql.table(tableName(f.table))} as ${sql.id(t)} on ${sql.ref(`${t}.id`)} = ${other}`;
  const condition = inner(f.filter, t);
  switch (f.mode) {
    case 'some':
      return sql<SqlBool>`exists (select 1 from ${join} where ${mine} = ${owner} and ${condition})`;
    case 'none':
      return sql<SqlBool>`not exists (select 1 from ${join} where ${mine} = ${owner} and ${condition})`;
    case 'every':
      return sql<SqlBool>`not exists (select 1 from ${join} where ${mine} = ${owner} and ((${condition}) is not true))`;
  }
}
