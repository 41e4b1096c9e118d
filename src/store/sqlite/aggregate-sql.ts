import { type RawBuilder, sql } from 'kysely';
import type { AggregateSql } from '../aggregate-dialect.ts';

/**
 * Aggregates on SQLite. Dates, date-times and year-months are stored as the API writes them
 * (`YYYY-MM-DD`, UTC `YYYY-MM-DDTHH:mm:ss.sssZ`, `YYYY-MM`), so a bucket is a part of that text.
 * SQLite has no time-zone data: a date-time's wall-clock time in another zone comes from
 * `rh_local_time`, a user function every connection registers (connection.ts) over the runtime's
 * zone data (domain/time-zones.ts).
 */

/** The SQL name of the connection's wall-clock function. */
export const LOCAL_TIME_FUNCTION = 'rh_local_time';

export const sqliteAggregates: AggregateSql = {
  bucket(column, source, bucket, timeZone) {
    const col = sql.ref(column);
    const x: RawBuilder<unknown> = source === 'dateTime' && timeZone !== null && timeZone !== 'UTC' ? sql`${sql.raw(LOCAL_TIME_FUNCTION)}(${col}, ${timeZone})` : sql`${col}`;
    switch (bucket) {
      case 'year':
        return sql<string>`substr(${x}, 1, 4)`;
      case 'quarter':
        return sql<string>`(substr(${x}, 1, 4) || '-Q' || ((cast(substr(${x}, 6, 2) as integer) + 2) / 3))`;
      case 'month':
        return sql<string>`substr(${x}, 1, 7)`;
      case 'week':
        // %G and %V: the ISO 8601 week-year and week (SQLite 3.46).
        return sql<string>`strftime('%G-W%V', substr(${x}, 1, 10))`;
      case 'day':
        return sql<string>`substr(${x}, 1, 10)`;
      case 'hour':
        return sql<string>`(substr(${x}, 1, 10) || 'T' || substr(${x}, 12, 2))`;
    }
  },
  // The column holds the JSON text `"<id>"`; ->> '$' its string (SQLite 3.38).
  linkId: (column) => sql<string>`(${sql.ref(column)} ->> '$')`,
  extreme: (fn, column) => sql`${sql.raw(fn)}(${sql.ref(column)})`,
  isUnknownTimeZone: () => false,
  isOverflow: () => false,
};
