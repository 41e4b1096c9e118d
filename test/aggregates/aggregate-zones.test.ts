import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { RefRow } from '../support/reference-rows.ts';
import { type TestApp, eachDatabase, startApp } from '../support/harness.ts';
import { FIELDS, assertSameGroups, prng, referenceGroups, walkGroups, wallClock } from '../support/reference-aggregates.ts';

/**
 * Date buckets of date-times in zones with daylight-saving time, over many years, on both
 * databases, against the in-memory reference (Intl's formatted parts): instants at, just before and
 * just after every change of New York (both sides of the 2007 US rule change), London and Lord Howe
 * (half an hour: +10:30 and +11) from 1996 to 2031, of Tokyo from 1946 to 1953 and of Boa Vista's
 * one-week summer time of 2000; at every hour of UTC around each new year; and before 1900 and
 * after 2100 (local mean time, rules projected ahead), beyond the years whose offsets SQLite's
 * statements carry. Every bucket in each zone, walked page by page, must equal the reference.
 */

const SPANS: [zone: string, fromYear: number, toYear: number, changes: number][] = [
  ['America/New_York', 1996, 2032, 72],
  ['Europe/London', 1996, 2032, 72],
  ['Australia/Lord_Howe', 1996, 2032, 72],
  ['Asia/Tokyo', 1946, 1954, 8],
  // Summer time of one week (2000-10-08 to 10-15): the shortest span between two changes of any zone from 1900 to 2100.
  ['America/Boa_Vista', 1999, 2002, 4],
];
const BUCKETS = ['hour', 'day', 'week', 'month', 'quarter', 'year'];
const DAY = 86_400_000;

/** The zone's offset at an instant (whole seconds), from the reference's wall-clock time. */
const offsetAt = (zone: string, ms: number) => Date.parse(`${wallClock(new Date(ms).toISOString(), zone)}Z`) - ms;

/** The instants the zone's offset changes at between the years: by day, then bisected to the second. */
function changes(zone: string, fromYear: number, toYear: number): number[] {
  const found: number[] = [];
  for (let t = Date.UTC(fromYear, 0, 1); t < Date.UTC(toYear, 0, 1); t += DAY) {
    const before = offsetAt(zone, t);
    if (offsetAt(zone, t + DAY) === before) continue;
    let lo = t / 1000;
    let hi = (t + DAY) / 1000;
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (offsetAt(zone, mid * 1000) === before) lo = mid;
      else hi = mid;
    }
    found.push(hi * 1000);
  }
  return found;
}

const AROUND = [-3_600_000, -1_800_001, -1000, -1, 0, 1, 1_799_999, 3_599_999, 3_600_000];

function instants(): string[] {
  const out: number[] = [];
  for (const [zone, from, to, count] of SPANS) {
    const found = changes(zone, from, to);
    assert.equal(found.length, count, `${zone}: changes`);
    for (const c of found) for (const d of AROUND) out.push(c + d);
  }
  // Every hour of UTC from 14 h before to 14 h after each new year (every zone's local midnight nearby), and a millisecond before it.
  for (let y = 1997; y <= 2031; y += 2) for (let h = -14; h <= 14; h++) out.push(Date.UTC(y, 0, 1) + h * 3_600_000, Date.UTC(y, 0, 1) + h * 3_600_000 - 1);
  // Before 1900 and after 2100: beyond the years whose offsets SQLite's statement carries.
  const r = prng(20_261_127);
  for (let i = 0; i < 60; i++) out.push(Date.UTC(1850, 0, 1) + Math.floor(r() * 50 * 365 * DAY), Date.UTC(2100, 0, 1) + Math.floor(r() * 100 * 365 * DAY));
  out.push(Date.UTC(1900, 0, 1) - 1, Date.UTC(1900, 0, 1), Date.UTC(2100, 0, 1) - 1, Date.UTC(2100, 0, 1));
  return out.map((ms) => new Date(ms).toISOString());
}

eachDatabase('aggregates: buckets across years of daylight-saving changes', (kind) => {
  let t: TestApp;
  let rows: RefRow[] = [];
  before(async () => {
    t = await startApp(kind);
    const fields = FIELDS.filter((f) => f.code === 'dt' || f.code === 'n');
    assert.equal((await t.post('/api/tables', { code: 'zoned', name: 'zoned', fields })).status, 201);
    const all: { values: Record<string, unknown> }[] = [...instants().map((dt, n) => ({ values: { dt, n } })), { values: { dt: null, n: -1 } }];
    for (let i = 0; i < all.length; i += 1000) {
      const r = await t.post('/api/tables/zoned/rows-bulk', { data: all.slice(i, i + 1000) });
      assert.equal(r.status, 201, r.text);
      rows = rows.concat(r.body.data as RefRow[]);
    }
  });
  after(() => t.close());

  for (const [zone] of SPANS) {
    it(`${zone}: every bucket equals the reference`, async () => {
      for (const bucket of BUCKETS) {
        const q = { groupBy: [{ field: 'dt', bucket, timeZone: zone }], metrics: [{ fn: 'count' }, { fn: 'min', field: 'dt' }, { fn: 'max', field: 'dt' }, { fn: 'sum', field: 'n' }], pageSize: 1000 };
        const expected = referenceGroups(rows, q);
        assert.ok(expected.length > 40, `${zone} ${bucket}: ${expected.length} groups`);
        assertSameGroups((await walkGroups(t, 'zoned', q)).flat(), expected, `${zone} ${bucket}`);
      }
    });
  }
});
