/** Calendar checks shared by the date and time field types and timestamp filters. */

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(?:\.(\d{1,9}))?)?(Z|[+-](?:[01]\d|2[0-3]):?[0-5]\d)$/i;

/** Years 0001 to 9999: what both databases store (PostgreSQL has no year 0). */
function isCalendarDate(year: number, month: number, day: number): boolean {
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return day <= (month === 2 ? (leap ? 29 : 28) : DAYS_IN_MONTH[month - 1]);
}
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** `YYYY-MM-DD` naming a real day. */
export function isDate(s: string): boolean {
  const m = DATE.exec(s);
  return m !== null && isCalendarDate(Number(m[1]), Number(m[2]), Number(m[3]));
}

/** `HH:MM:SS`, 00:00:00 to 23:59:59. */
export function isTime(s: string): boolean {
  return /^([01]\d|2[0-3]):[0-5]\d:[0-5]\d$/.test(s);
}

/** `YYYY-MM`. */
export function isYearMonth(s: string): boolean {
  return /^\d{4}-(0[1-9]|1[0-2])$/.test(s) && !s.startsWith('0000');
}

/**
 * An ISO 8601 date-time with an offset, normalised to UTC `YYYY-MM-DDTHH:mm:ss.sssZ`;
 * null when it is not one (a missing offset is ambiguous, so it is refused).
 */
export function normaliseDateTime(s: string): string | null {
  const m = DATE_TIME.exec(s);
  if (!m || !isCalendarDate(Number(m[1]), Number(m[2]), Number(m[3]))) return null;
  // Already in the normal form (what this service writes and exports): nothing to convert.
  if (s.length === 24 && m[7]?.length === 3 && m[8] === 'Z' && s[10] === 'T') return s;
  const t = Date.parse(s);
  if (Number.isNaN(t)) return null;
  const iso = new Date(t).toISOString();
  // Years beyond 9999 do not fit the format; an offset can move 0001-01-01 into year 0, which PostgreSQL cannot store.
  return iso.length === 24 && !iso.startsWith('0000') ? iso : null;
}
