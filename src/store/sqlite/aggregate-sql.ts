import { type RawBuilder, sql } from 'kysely';
import type { Bucket } from '../../domain/requests/aggregate-query.ts';
import { offsetAtInstant, offsetSpans } from '../../domain/time-zones.ts';
import type { AggregateSql } from '../aggregate-dialect.ts';

/**
 * Aggregates on SQLite. Dates, date-times and year-months are stored as the API writes them
 * (`YYYY-MM-DD`, UTC `YYYY-MM-DDTHH:mm:ss.sssZ`, `YYYY-MM`), so a bucket is a part of that text.
 *
 * SQLite has no time-zone data. A date-time's bucket in another zone is strftime of the value
 * shifted by the zone's offset at that instant (`strftime('%Y-%m', col, '+32400 seconds')`), and
 * the offset is chosen in SQL: a CASE over the zone's changes from 1900 to 2100 (computed by the
 * service from the runtime's zone data, domain/time-zones.ts, and written into the statement), a
 * binary search of a few comparisons of the stored text per row. Instants outside those years ask
 * `rh_zone_shift`, a user function every connection registers (connection.ts), per row.
 */

/** The SQL name of the connection's offset function: the modifier shifting an instant to its wall-clock time in a zone. */
export const ZONE_SHIFT_FUNCTION = 'rh_zone_shift';

/** The years whose offsets the statement carries; instants before or after call ZONE_SHIFT_FUNCTION. */
const SPANS_FROM = Date.UTC(1900, 0, 1);
const SPANS_TO = Date.UTC(2100, 0, 1);

/** strftime's modifier adding an offset (ms, whole seconds): `+32400 seconds`, `-18000 seconds`. */
function shiftModifier(offset: number): string {
  const seconds = Math.round(offset / 1000);
  return `${seconds < 0 ? '-' : '+'}${Math.abs(seconds)} seconds`;
}

/** ZONE_SHIFT_FUNCTION: the modifier of the zone's offset at a stored instant, null for null. */
export function zoneShiftAt(instant: unknown, zone: unknown): string | null {
  const offset = offsetAtInstant(instant, zone);
  return offset === null ? null : shiftModifier(offset);
}

/** A string as an SQL literal. */
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** A stored instant as text compared with the column's (fixed-width ISO 8601, so text order is time order). */
const stored = (ms: number) => literal(new Date(ms).toISOString());

/**
 * The SQL of the modifier of `zone`'s offset at a column's instant, in pieces to be joined with the
 * column's name: a CASE searching the zone's spans. Each split is the change nearest the middle of
 * its stretch of time, so a span of many years (Tokyo's since 1951) is reached in a comparison or
 * two, and spans of months in about log2 of their number. A null instant falls to the last span's
 * modifier, and strftime of null is null. Written as text once per zone (a CASE over New York's
 * 360 changes is 27 kB, which Kysely took 13 ms to compile on a busy machine) and remembered.
 */
function zoneShiftPieces(zone: string): string[] {
  const spans = offsetSpans(zone, SPANS_FROM, SPANS_TO);
  // The column goes between the pieces: [''] + pieces of text between two mentions of it.
  const pieces: string[] = [''];
  const text = (t: string) => (pieces[pieces.length - 1] += t);
  const column = () => pieces.push('');
  const beyond = () => {
    text(`${ZONE_SHIFT_FUNCTION}(`);
    column();
    text(`, ${literal(zone)})`);
  };
  // Leaf 0: before the first span; leaf i: spans[i - 1], up to the next span's start or SPANS_TO.
  const start = (leaf: number) => (leaf === 0 ? SPANS_FROM : spans[leaf - 1].from);
  const end = (leaf: number) => (leaf === spans.length ? SPANS_TO : spans[leaf].from);
  const search = (first: number, last: number): void => {
    if (first === last) {
      if (first === 0) beyond();
      else text(literal(shiftModifier(spans[first - 1].offset)));
      return;
    }
    const middle = (start(first) + end(last)) / 2;
    // The leaf the right half starts at: the span start nearest the middle, leaving both halves non-empty.
    let split = first + 1;
    for (let i = first + 2; i <= last; i++) if (Math.abs(start(i) - middle) < Math.abs(start(split) - middle)) split = i;
    text('case when ');
    column();
    text(` < ${stored(start(split))} then `);
    search(first, split - 1);
    text(' else ');
    search(split, last);
    text(' end');
  };
  text('case when ');
  column();
  text(` >= ${stored(SPANS_TO)} then `);
  beyond();
  text(' else ');
  search(0, spans.length);
  text(' end');
  return pieces;
}

const shiftPieces = new Map<string, string[]>();

/** The modifier of `zone`'s offset at the instant of `column` (zoneShiftPieces). */
function zoneShift(column: string, zone: string): RawBuilder<string> {
  let pieces = shiftPieces.get(zone);
  if (!pieces) {
    pieces = zoneShiftPieces(zone);
    if (shiftPieces.size >= 1000) shiftPieces.clear();
    shiftPieces.set(zone, pieces);
  }
  // Physical column names are the service's own (f_<hex>, created_at): quoted as Kysely quotes them.
  return sql.raw<string>(pieces.join(`"${column.replaceAll('"', '""')}"`));
}

/** strftime's format of each bucket's label (the quarter is made of two). */
const FORMATS: Record<Exclude<Bucket, 'quarter'>, string> = {
  year: '%Y',
  month: '%Y-%m',
  // %G and %V: the ISO 8601 week-year and week (SQLite 3.46).
  week: '%G-W%V',
  day: '%Y-%m-%d',
  hour: '%Y-%m-%dT%H',
};

/** The bucket of a dateTime column's wall-clock time in `zone` (not UTC). */
function zonedBucket(column: string, bucket: Bucket, zone: string): RawBuilder<string> {
  const col = sql.ref(column);
  const shift = zoneShift(column, zone);
  const local = (format: string) => sql<string>`strftime(${sql.lit(format)}, ${col}, ${shift})`;
  return bucket === 'quarter' ? sql<string>`(${local('%Y-Q')} || ((cast(${local('%m')} as integer) + 2) / 3))` : local(FORMATS[bucket]);
}

export const sqliteAggregates: AggregateSql = {
  bucket(column, source, bucket, timeZone) {
    if (source === 'dateTime' && timeZone !== null && timeZone !== 'UTC') return zonedBucket(column, bucket, timeZone);
    const x = sql.ref(column);
    switch (bucket) {
      case 'year':
        return sql<string>`substr(${x}, 1, 4)`;
      case 'quarter':
        return sql<string>`(substr(${x}, 1, 4) || '-Q' || ((cast(substr(${x}, 6, 2) as integer) + 2) / 3))`;
      case 'month':
        return sql<string>`substr(${x}, 1, 7)`;
      case 'week':
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
