/**
 * IANA time zones: checking a requested name, and a zone's offset from UTC at an instant and over a
 * stretch of time, from the time-zone data of the JavaScript runtime (ICU). PostgreSQL answers the
 * same from its own data (`AT TIME ZONE`); SQLite has none, so its aggregates add the offsets
 * computed here (store/sqlite/aggregate-sql.ts). test/aggregates/ compares the two databases'
 * answers with each other and with a reference written from Intl's formatted parts.
 */

/** Names already looked up (making a formatter to ask costs about 0.4 ms): canonical name, or null. */
const canonical = new Map<string, string | null>();

/** The zone's canonical name (`asia/tokyo` → `Asia/Tokyo`), or null when it is not an IANA zone name. */
export function canonicalTimeZone(name: unknown): string | null {
  // Names only: an offset such as "+09:00" or "UTC+9" reads differently to PostgreSQL (POSIX signs are inverted).
  if (typeof name !== 'string' || !/^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/.test(name) || /^(utc|gmt)[+-]/i.test(name)) return null;
  let found = canonical.get(name);
  if (found === undefined) {
    try {
      found = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
    } catch {
      found = null;
    }
    if (canonical.size >= 10_000) canonical.clear();
    canonical.set(name, found);
  }
  return found;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** A formatter writing the zone's offset at an instant, as `GMT+09:00` (`GMT+09:18:59` for local mean time; `GMT` for none). */
function formatterOf(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' });
    formatters.set(zone, f);
  }
  return f;
}

const HOUR = 3_600_000;
const OFFSET = /GMT(?:([+-])(\d{2}):(\d{2})(?::(\d{2}))?)?$/;

/** The zone's offset from UTC at an instant, in milliseconds (whole seconds: historical offsets have them). */
function offsetAt(zone: string, ms: number): number {
  const text = formatterOf(zone).format(ms);
  const m = OFFSET.exec(text);
  if (!m) throw new Error(`unexpected offset ${text} of ${zone}`);
  if (!m[1]) return 0;
  const seconds = Number(m[2]) * 3600 + Number(m[3]) * 60 + Number(m[4] ?? 0);
  return (m[1] === '-' ? -seconds : seconds) * 1000;
}

/**
 * Offsets by zone and UTC hour, for the hours in which the offset does not change (its first and
 * last millisecond agree; the time-zone data holds no hour with two changes that cancel out).
 */
const hourOffsets = new Map<string, Map<number, number>>();
const MAX_HOURS = 100_000;

function offsetOf(zone: string, ms: number): number {
  let hours = hourOffsets.get(zone);
  if (!hours) {
    hours = new Map();
    hourOffsets.set(zone, hours);
  }
  const hour = Math.floor(ms / HOUR);
  const known = hours.get(hour);
  if (known !== undefined) return known;
  const start = offsetAt(zone, hour * HOUR);
  // The offset changes within this hour: this instant's own, not kept.
  if (offsetAt(zone, hour * HOUR + HOUR - 1) !== start) return offsetAt(zone, ms);
  if (hours.size >= MAX_HOURS) hours.clear();
  hours.set(hour, start);
  return start;
}

/**
 * The zone's offset from UTC (milliseconds, whole seconds) at an instant written as ISO 8601 (a
 * stored dateTime); null for null or what is not an instant.
 */
export function offsetAtInstant(instant: unknown, zone: unknown): number | null {
  if (typeof instant !== 'string' || typeof zone !== 'string') return null;
  const ms = Date.parse(instant);
  if (Number.isNaN(ms)) return null;
  return offsetOf(zone, ms);
}

/** A stretch of time from `from` (ms since the epoch) to the next span's `from`, in which a zone's offset is `offset` ms. */
export interface OffsetSpan {
  from: number;
  offset: number;
}

/**
 * How far apart the offset is read when looking for its changes: a change and its undoing within
 * one step would go unseen. The shortest span between two changes of any zone of the runtime's
 * data from 1900 to 2100, read every day and bisected, is 6.96 days (America/Boa_Vista's summer
 * time of October 2000, and Gaza's and Hebron's projected rules); no day held two changes.
 */
const SCAN_STEP = 3 * 86_400_000;
const spans = new Map<string, OffsetSpan[]>();

/**
 * The zone's offsets from `from` to `to` (ms since the epoch, whole seconds): spans in time order,
 * the first from `from`, each starting at the exact second of a change. The offset is read every
 * SCAN_STEP, and where it differs from the last, the second it changed at is found by bisection.
 * Remembered per zone and stretch (the zones are a few hundred; SQLite's aggregates ask for one stretch).
 */
export function offsetSpans(zone: string, from: number, to: number): OffsetSpan[] {
  const key = `${zone} ${from} ${to}`;
  const known = spans.get(key);
  if (known) return known;
  const found: OffsetSpan[] = [{ from, offset: offsetAt(zone, from) }];
  let at = from;
  while (at < to) {
    const current = found[found.length - 1].offset;
    const next = Math.min(at + SCAN_STEP, to);
    if (offsetAt(zone, next) === current) {
      at = next;
      continue;
    }
    // The offset is `current` at `lo` seconds and another at `hi`: the change is at a whole second (the data has no finer).
    let lo = Math.floor(at / 1000);
    let hi = Math.ceil(next / 1000);
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (offsetAt(zone, mid * 1000) === current) lo = mid;
      else hi = mid;
    }
    at = hi * 1000;
    if (at < to) found.push({ from: at, offset: offsetAt(zone, at) });
  }
  if (spans.size >= 10_000) spans.clear();
  spans.set(key, found);
  return found;
}
