import type { RawBuilder } from 'kysely';
import type { Bucket, BucketSource } from '../domain/requests/aggregate-query.ts';
import type { ColumnKind } from '../domain/value-codec.ts';

/**
 * What aggregates (aggregate-sql.ts) ask of each database where SQLite and PostgreSQL differ
 * (sqlite/aggregate-sql.ts, postgres/aggregate-sql.ts).
 */
export interface AggregateSql {
  /**
   * The label of the bucket holding a date-like column's value (null for null), as text in byte
   * order: `YYYY`, `YYYY-Qn`, `YYYY-MM`, `YYYY-Www` (ISO week-year and week), `YYYY-MM-DD`,
   * `YYYY-MM-DDTHH`; a dateTime's taken at its wall-clock time in `timeZone`.
   */
  bucket(column: string, source: BucketSource, bucket: Bucket, timeZone: string | null): RawBuilder<string>;
  /** The linked row's id of a single link's column (its JSON string) as text in byte order, null for none: a link's group key. */
  linkId(column: string): RawBuilder<string>;
  /** The least or greatest non-null value of a column of this kind in a group. */
  extreme(fn: 'min' | 'max', column: string, kind: ColumnKind): RawBuilder<unknown>;
  /**
   * The database refused a time zone the service's zone data knows (PostgreSQL's data may be
   * older): the request's fault, a 400. SQLite uses the service's data, so never.
   */
  isUnknownTimeZone(err: unknown): boolean;
  /** A sum went beyond the range of a double (PostgreSQL refuses it; SQLite answers infinity, which aggregate-sql.ts checks for). */
  isOverflow(err: unknown): boolean;
}
