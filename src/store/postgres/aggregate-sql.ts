import { type RawBuilder, sql } from 'kysely';
import type { Bucket } from '../../domain/requests/aggregate-query.ts';
import type { AggregateSql } from '../aggregate-dialect.ts';
import { errCode, messageOf } from '../driver-errors.ts';

/**
 * Aggregates on PostgreSQL: a bucket's label is to_char of the value's wall-clock time (a
 * timestamptz `AT TIME ZONE` the zone, by PostgreSQL's own zone data), in byte order (collate
 * "C") as every text key is compared.
 */

const FORMATS: Record<Bucket, string> = {
  year: 'YYYY',
  quarter: 'YYYY-"Q"Q',
  month: 'YYYY-MM',
  // The ISO 8601 week-year and week: 2021-01-03 is in 2020-W53.
  week: 'IYYY-"W"IW',
  day: 'YYYY-MM-DD',
  hour: 'YYYY-MM-DD"T"HH24',
};

export const postgresAggregates: AggregateSql = {
  bucket(column, source, bucket, timeZone) {
    const col = sql.ref(column);
    const local: RawBuilder<unknown> =
      source === 'dateTime' ? sql`(${col} at time zone ${timeZone ?? 'UTC'}::text)` : source === 'date' ? sql`${col}::timestamp` : sql`(${col} || '-01')::timestamp`;
    return sql<string>`(to_char(${local}, ${sql.lit(FORMATS[bucket])}) collate "C")`;
  },
  // The column holds a jsonb string; #>> '{}' its text, compared in byte order as every text key.
  linkId: (column) => sql<string>`((${sql.ref(column)} #>> '{}') collate "C")`,
  // PostgreSQL has no min or max of booleans: false is the least (every one true: bool_and).
  extreme: (fn, column, kind) =>
    kind === 'boolean' ? sql`${sql.raw(fn === 'min' ? 'bool_and' : 'bool_or')}(${sql.ref(column)})` : sql`${sql.raw(fn)}(${sql.ref(column)})`,
  // invalid_parameter_value: time zone "…" not recognized.
  isUnknownTimeZone: (err) => errCode(err) === '22023' && /time zone/i.test(messageOf(err)),
  // numeric_value_out_of_range: a sum of doubles beyond 1.8e308.
  isOverflow: (err) => errCode(err) === '22003',
};
