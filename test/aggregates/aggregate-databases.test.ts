import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type TestApp, databaseKinds, startApp } from '../support/harness.ts';
import { FIELDS, ZONES, assertSameGroups, prng, randomQuery, randomRow, walkGroups } from '../support/reference-aggregates.ts';

/**
 * SQLite against PostgreSQL: the same rows and the same aggregate queries give the same groups
 * and metrics (doubles within a relative 1e-9). SQLite has no time-zone data and takes wall-clock
 * times from the runtime's (domain/time-zones.ts); PostgreSQL from its own: every hour bucket of
 * instants each quarter of an hour around daylight-saving changes, and of instants from 1850 to
 * 2100 (historical offsets in seconds among them), must agree in many zones.
 */

const SEED = Number(process.env.ROWHOUSE_AGG_SEED ?? 20_261_127);
const QUERIES = Number(process.env.ROWHOUSE_AGG_QUERIES ?? 40);

const MORE_ZONES = [...ZONES, 'America/Los_Angeles', 'America/Sao_Paulo', 'Europe/London', 'Europe/Moscow', 'Asia/Kathmandu', 'Australia/Lord_Howe', 'Pacific/Kiritimati', 'Africa/Casablanca', 'America/Santiago', 'Asia/Tehran'];

describe('aggregates: SQLite and PostgreSQL give the same answers', { skip: !databaseKinds().includes('postgres') && 'no PostgreSQL' }, () => {
  let apps: TestApp[];
  before(async () => {
    apps = [await startApp('sqlite'), await startApp('postgres')];
    const r = prng(SEED);
    const random = Array.from({ length: 150 }, () => randomRow(r, true));
    const sweep: Record<string, unknown>[] = [];
    // Every quarter of an hour from 3 h before to 3 h after each change of 2024 in the zones above.
    for (const change of ['2024-03-10T07:00:00Z', '2024-11-03T06:00:00Z', '2024-03-31T01:00:00Z', '2024-10-27T01:00:00Z', '2024-04-06T16:00:00Z', '2024-10-05T16:00:00Z', '2024-04-06T14:00:00Z', '2024-09-28T14:00:00Z', '2024-04-06T15:00:00Z', '2024-11-03T04:30:00Z', '2024-09-08T04:00:00Z', '2024-04-07T03:00:00Z']) {
      for (let m = -180; m <= 180; m += 15) sweep.push({ dt: new Date(Date.parse(change) + m * 60_000).toISOString(), n: m });
    }
    // Instants from 1850 to 2100: local mean time before the zones' standard offsets, and rules projected ahead.
    for (let i = 0; i < 300; i++) sweep.push({ dt: new Date(Date.UTC(1850, 0, 1) + Math.floor(r() * 250 * 365.25 * 86_400_000) + (i % 7) * 1000).toISOString(), n: i });
    for (const t of apps) {
      assert.equal((await t.post('/api/tables', { code: 'mixed', name: 'mixed', fields: FIELDS })).status, 201);
      assert.equal((await t.post('/api/tables/mixed/rows-bulk', { data: random.map((values) => ({ values })) })).status, 201);
      assert.equal((await t.post('/api/tables', { code: 'sweep', name: 'sweep', fields: FIELDS })).status, 201);
      assert.equal((await t.post('/api/tables/sweep/rows-bulk', { data: sweep.map((values) => ({ values })) })).status, 201);
    }
  });
  after(async () => {
    for (const t of apps ?? []) await t.close();
  });

  it('the same wall-clock hours, days, weeks and quarters in every zone', async () => {
    for (const timeZone of MORE_ZONES) {
      for (const bucket of ['hour', 'day', 'week', 'quarter']) {
        const q = { groupBy: [{ field: 'dt', bucket, timeZone }], metrics: [{ fn: 'count' }, { fn: 'min', field: 'dt' }, { fn: 'sum', field: 'n' }], pageSize: 1000 };
        const [a, b] = await Promise.all(apps.map((t) => walkGroups(t, 'sweep', q)));
        assertSameGroups(a.flat(), b.flat(), `${timeZone} ${bucket}`);
        assert.ok(a.flat().length > 20, `${timeZone} ${bucket}: ${a.flat().length} groups`);
      }
    }
  });

  it(`the same groups for ${QUERIES} random queries, page by page`, async () => {
    const r = prng(SEED + 1);
    for (let i = 0; i < QUERIES; i++) {
      const q = randomQuery(r);
      // Doubles summed in another order may differ in their last bits: an order by them may then differ where they tie.
      q.sort = q.sort?.filter((s) => !/^(sum|avg)_|^m\d/.test(Object.keys(s)[0]));
      const [a, b] = await Promise.all(apps.map((t) => walkGroups(t, 'mixed', q)));
      assert.deepEqual(a.map((p) => p.length), b.map((p) => p.length), `query ${i}: pages`);
      assertSameGroups(a.flat(), b.flat(), `query ${i}: ${JSON.stringify(q)}`);
    }
  });
});
