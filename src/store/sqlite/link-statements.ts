import { sql } from 'kysely';
import type { LinkSql } from '../link-dialect.ts';
import type { ColumnKind } from '../../domain/value-codec.ts';
import { sqliteRecordValues } from './record-values.ts';

/** The column kinds whose values SQLite writes in a record's JSON text exactly as the renderer does. */
const EXACT_KINDS: ReadonlySet<ColumnKind> = new Set<ColumnKind>(['text', 'boolean', 'timestamp', 'date', 'time']);

/** SQLite's link statements (link-dialect.ts): lists bound as one JSON array, link values as JSON text. */
export const sqliteLinkSql: LinkSql = {
  listParameters: () => 1,
  // One column: a JSON array of its values; more: a JSON array of rows, each an array.
  bindList: (columns) => [JSON.stringify(columns.length === 1 ? columns[0] : columns[0].map((_, k) => columns.map((c) => c[k])))],
  listRows: ([param], names) =>
    names.length === 1
      ? sql`(select value as ${sql.raw(names[0])}, key as rh_k from json_each(${param})) as rh_list`
      : sql`(select ${sql.join(names.map((n, i) => sql`value ->> ${sql.raw(String(i))} as ${sql.raw(n)}`))}, key as rh_k from json_each(${param})) as rh_list`,
  followed(current, add, drop, mayHold, multiple) {
    // A single link's value is a JSON string ("c1"), as JSON.stringify writes it.
    if (!multiple) return sql`coalesce(${add} -> '$[#-1]', case when ${current} ->> '$' in (select value from json_each(${drop})) then null else ${current} end)`;
    // Appending (a bulk create's): the texts joined (a stored value is JSON text as JSON.stringify
    // or json_group_array writes it, with no spaces; none is '[]'). Else each id of the value kept
    // unless dropped, in order, then each added one (json_each of null: no rows).
    return sql`case
      when ${drop} is null and ${current} is null then ${add}
      when ${drop} is null and ${add} is not null and ${current} <> '[]'
        and (${mayHold} is null or not exists (select 1 from json_each(${add}) as a where a.value in (select value from json_each(${current}))))
        then substr(${current}, 1, length(${current}) - 1) || ',' || substr(${add}, 2)
      else (select nullif(json_group_array(rh_x order by rh_o), '[]') from (
        select e.value as rh_x, e.key as rh_o from json_each(${current}) as e
          where ${drop} is null or e.value not in (select value from json_each(${drop}))
        union all
        select a.value, 1099511627776 + a.key from json_each(${add}) as a
          where ${mayHold} is null or a.value not in (select value from json_each(${current}))))
      end`;
  },
  // The column holds that text.
  linkJson: (column) => column,
  // json_quote escapes text as JSON.stringify does (test/links/link-expand-records.test.ts), dates and
  // times are stored as the API writes them, booleans as 0 and 1; a JSON column whose type answers
  // its stored text as it is (jsonFromDb: links, lists, records) is copied. Not numbers (json_quote
  // writes 2 as 2.0) nor files (answered as parsed and written again).
  recordValueExact: (type) => EXACT_KINDS.has(type.column) || (type.column === 'json' && type.jsonFromDb !== undefined),
  exactRecordValues: sqliteRecordValues,
  // The primary key (src, dst) is the table: one B-tree fewer for each edge written.
  edgeTableOptions: 'without rowid',
};
