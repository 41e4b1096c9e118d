import { sql } from 'kysely';
import type { LinkSql } from '../link-dialect.ts';
import type { ColumnKind } from '../../domain/value-codec.ts';
import { linkType } from '../../domain/field-types/link.ts';
import { postgresRecordValues } from './record-values.ts';

/** A link value's JSON text in a record rendered by the database, as linkJson writes it. */
const compactLinks = (column: string) => `replace(cast(${column} as text), '", "', '","')`;

/**
 * The column kinds whose values PostgreSQL writes in a record's JSON text exactly as the renderer
 * writes what the driver reads (driver.ts): texts (to_json escapes as JSON.stringify does: the quote, the backslash,
 * \b \f \n \r \t by name, other controls as lowercase \u00xx, nothing else), booleans, dates and
 * times (the driver's text, quoted), timestamps (the API's form: every value the service stores is
 * of years 0001 to 9999, read by the driver's utcTimestamp as to_char writes it, milliseconds
 * truncated). Not numbers (float8's text spells exponents its own way: 1e-07, 1e+16), nor jsonb
 * but links (its text has a space after each comma and colon, its keys its own order).
 */
const EXACT_KINDS: ReadonlySet<ColumnKind> = new Set<ColumnKind>(['text', 'boolean', 'timestamp', 'date', 'time']);

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
  recordValueExact: (type) => EXACT_KINDS.has(type.column) || type === linkType,
  // Dates and times as the driver reads them (its text: to_json of the date itself writes ISO
  // whatever the DateStyle); the only JSON columns taken hold links.
  exactRecordValues: { ...postgresRecordValues, date: (c) => `to_json(${c}::text)::text`, time: (c) => `to_json(${c}::text)::text`, json: compactLinks },
  edgeTableOptions: '',
};
