import assert from 'node:assert/strict';
import { after, before, beforeEach, it } from 'node:test';
import { sql } from 'kysely';
import type { IdempotencyRecord } from '../../src/store/idempotency-store.ts';
import { keyHashOf } from '../../src/store/idempotency-key-hash.ts';
import type { MetaDb } from '../../src/store/meta-schema.ts';
import { type TestApp, eachDatabase, startApp } from '../support/harness.ts';

/**
 * The sweep of expired Idempotency-Key answers (IdempotencyStore.sweep): every expired record is
 * deleted and every unexpired one kept, whatever the order they were kept in. On SQLite the table
 * has no index on expiresAt and is walked in insertion order (sqlite/idempotency-sweep.ts), so the
 * records here are inserted in orders that walk must cope with: expired ones after more than a
 * batch (1,000) of unexpired ones, as a time to live shortened at a restart leaves them.
 */

eachDatabase('Idempotency-Key sweep', (kind) => {
  let t: TestApp;
  let db: MetaDb;
  const now = Date.now();
  const at = (seconds: number) => new Date(now + seconds * 1000).toISOString();

  before(async () => {
    t = await startApp(kind);
    db = t.database.db;
  });
  beforeEach(async () => {
    await db.deleteFrom('rh_idempotency').execute();
  });
  after(() => t.close());

  /** Keeps records in this order, named `key` with expiresAt `expiresAt` (seconds from now). */
  async function keep(records: { key: string; expiresIn: number }[]): Promise<void> {
    const rows: (IdempotencyRecord & { keyHash: bigint })[] = records.map(({ key, expiresIn }) => ({
      keyHash: keyHashOf('sweep-test', key),
      keyId: 'sweep-test',
      key,
      method: 'POST',
      path: '/api/tables/t/rows',
      bodyHash: 'h',
      status: 201,
      contentType: 'application/json; charset=utf-8',
      body: '{}',
      createdAt: at(expiresIn - 3600),
      expiresAt: at(expiresIn),
    }));
    // One record per statement, in order (the order of insertion is the sweep's order on SQLite).
    for (let i = 0; i < rows.length; i += 200) await db.insertInto('rh_idempotency').values(rows.slice(i, i + 200)).execute();
  }
  const left = async () => (await db.selectFrom('rh_idempotency').select('key').orderBy('key').execute()).map((r) => r.key);
  const named = (prefix: string, n: number, expiresIn: number) => Array.from({ length: n }, (_, i) => ({ key: `${prefix}-${String(i).padStart(5, '0')}`, expiresIn }));

  it('deletes the expired records at the head of the table, many batches of them, and keeps the rest', async () => {
    await keep([...named('a-expired', 2_500, -60), { key: 'b-now', expiresIn: 0 }, ...named('c-kept', 1_200, 60)]);
    const deleted = await t.app.idempotency.sweep(at(0));
    assert.equal(deleted, 2_501);
    const kept = await left();
    assert.equal(kept.length, 1_200);
    assert.ok(kept.every((k) => k.startsWith('c-kept')));
  });

  it('deletes expired records kept after unexpired ones (a shorter time to live since), and keeps every unexpired one', async () => {
    await keep([
      { key: 'a-expired-first', expiresIn: -10 },
      ...named('b-kept-long', 2_100, 3600),
      { key: 'c-expired-later', expiresIn: -5 },
      ...named('d-kept-short', 10, 60),
      { key: 'e-expired-last', expiresIn: -1 },
    ]);
    assert.equal(await t.app.idempotency.sweep(at(0)), 3);
    const kept = await left();
    assert.equal(kept.length, 2_110);
    assert.ok(kept.every((k) => k.startsWith('b-kept-long') || k.startsWith('d-kept-short')));
    // Nothing left to sweep: a second sweep deletes nothing.
    assert.equal(await t.app.idempotency.sweep(at(0)), 0);
    assert.equal((await left()).length, 2_110);
  });

  it('deletes a record taken over in place by a new answer once that one expires', async () => {
    await keep([{ key: 'a-reused', expiresIn: -10 }, ...named('b-kept', 1_100, 3600)]);
    // The key's expired record given a new answer in place (as IdempotencyStore.keep's upsert does), expiring later.
    await db.updateTable('rh_idempotency').set({ expiresAt: at(30) }).where('key', '=', 'a-reused').execute();
    assert.equal(await t.app.idempotency.sweep(at(0)), 0);
    assert.equal((await left()).length, 1_101);
    assert.equal(await t.app.idempotency.sweep(at(31)), 1);
    assert.deepEqual((await left()).filter((k) => k === 'a-reused'), []);
  });

  it('has no index on expiresAt on SQLite (migration 19); PostgreSQL keeps it', async () => {
    const indexes =
      kind === 'sqlite'
        ? (await sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'rh_idempotency'`.execute(db)).rows
        : (await sql<{ name: string }>`select indexname as name from pg_indexes where tablename = 'rh_idempotency'`.execute(db)).rows;
    assert.equal(indexes.some((r) => r.name === 'rh_idempotency_expires'), kind === 'postgres');
  });
});
