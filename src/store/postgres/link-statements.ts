import { sql } from 'kysely';
import type { LinkSql } from '../link-dialect.ts';

/** PostgreSQL's link statements (link-dialect.ts): lists bound as text arrays, link values as jsonb. */
export const postgresLinkSql: LinkSql = {
  listParameters: (width) => width,
  // node-postgres binds a JavaScript array as a PostgreSQL array (nulls as NULL).
  bindList: (columns) => columns.map((c) => [...c]),
  listRows: (params, names) =>
    sql`unnest(${sql.join(params.map((p) => sql`cast(${p} as text[])`))}) with ordinality as rh_list(${sql.raw(names.join(', '))}, rh_k)`,
  followed(current, add, drop, mayHold, multiple) {
    const adding = sql`cast(${add} as jsonb)`;
    const dropping = sql`cast(${drop} as jsonb)`;
    if (!multiple) return sql`coalesce(${adding} -> -1, case when ${dropping} @> jsonb_build_array(${current}) then null else ${current} end)`;
    // Appending (a bulk create's): the arrays joined. Else each id of the value kept unless
    // dropped, in order, then each added one.
    return sql`case
      when ${drop} is null and ${add} is not null
        and (${mayHold} is null or ${current} is null or not (${current} ?| array(select jsonb_array_elements_text(${adding}))))
        then coalesce(${current}, '[]'::jsonb) || ${adding}
      else (select jsonb_agg(rh_x order by rh_o) from (
        select rh_x, rh_o from jsonb_array_elements(${current}) with ordinality as rh_a(rh_x, rh_o)
          where ${drop} is null or not (${dropping} @> jsonb_build_array(rh_x))
        union all
        select rh_x, 1099511627776 + rh_o from jsonb_array_elements(${adding}) with ordinality as rh_b(rh_x, rh_o)
          where ${mayHold} is null or ${current} is null or not (${current} @> jsonb_build_array(rh_x))) as rh_s)
      end`;
  },
  linkJson: (column) => sql`replace(cast(${column} as text), '", "', '","')`,
  // Its JSON columns are written with a space after each comma and colon, its numbers and times in its own spelling: none is taken.
  recordValueExact: () => false,
  edgeTableOptions: '',
};
