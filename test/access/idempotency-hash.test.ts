import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { sql } from 'kysely';
import { keyHashOf } from '../../src/store/idempotency-key-hash.ts';
import { migrate } from '../../src/store/migrations.ts';
import { type TestApp, eachDatabase, startApp, withKey } from '../support/harness.ts';

/**
 * Kept answers are found by an 8-byte hash of their API key's id and Idempotency-Key (migration 20,
 * store/idempotency-key-hash.ts). The migration copies the records a database kept before it, so a
 * retry sent across the upgrade is still answered by its first answer, never written again.
 */

eachDatabase('Idempotency-Key: kept answers by the hash of their key', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(kind);
    assert.equal((await t.post('/api/tables', { code: 'orders', name: 'Orders', fields: [{ code: 'title', type: 'text' }] })).status, 201);
  });
  after(() => t.close());

  it('is 8 bytes of SHA-256 of the key id and the key, the same for the same pair and another for another', () => {
    assert.equal(typeof keyHashOf('k1', 'a'), 'bigint');
    assert.equal(keyHashOf('k1', 'a'), keyHashOf('k1', 'a'));
    assert.notEqual(keyHashOf('k1', 'a'), keyHashOf('k1', 'b'));
    assert.notEqual(keyHashOf('k1', 'a'), keyHashOf('k2', 'a'));
    // The separator keeps ("k1\n", "a") and ("k1", "\na") apart only if keys cannot hold a newline: they cannot (printable ASCII).
    assert.notEqual(keyHashOf('k', '1a'), keyHashOf('k1', 'a'));
  });

  it('migration 20 keeps every answer kept before it (more than a batch of them): a retry across the upgrade is replayed, not written again', async () => {
    const db = t.database.db;
    const created = await t.post('/api/tables/orders/rows', { values: { title: 'before the upgrade' } }, withKey('across-upgrade'));
    assert.equal(created.status, 201);
    const patched = await t.patch(`/api/tables/orders/rows/${created.body.id}`, { values: { title: 'patched' } }, withKey('patch-across'));
    assert.equal(patched.status, 200);
    // The table as migration 16 made it (its primary key the text pair, no hash), holding those two and 1,200 more.
    const ts = sql.raw(t.database.dialect.columnType('timestamp'));
    await sql`create table rh_idempotency_before ("keyId" text not null, "key" text not null, "method" text not null, "path" text not null, "bodyHash" text not null, "status" ${sql.raw(t.database.dialect.columnType('integer'))} not null, "contentType" text, "body" text, "createdAt" ${ts} not null, "expiresAt" ${ts} not null, primary key ("keyId", "key"))`.execute(db);
    await sql`insert into rh_idempotency_before select "keyId", "key", "method", "path", "bodyHash", "status", "contentType", "body", "createdAt", "expiresAt" from rh_idempotency`.execute(db);
    const keyId = (await sql<{ keyId: string }>`select "keyId" from rh_idempotency where "key" = 'across-upgrade'`.execute(db)).rows[0].keyId;
    const later = new Date(Date.now() + 3600_000).toISOString();
    for (let i = 0; i < 1200; i += 200) {
      const batch = Array.from({ length: 200 }, (_, k) => sql`(${keyId}, ${`bulk-${String(i + k).padStart(4, '0')}`}, 'POST', '/api/tables/orders/rows', 'h', 201, 'application/json; charset=utf-8', ${`{"n":${i + k}}`}, ${later}, ${later})`);
      await sql`insert into rh_idempotency_before values ${sql.join(batch)}`.execute(db);
    }
    await sql`drop table rh_idempotency`.execute(db);
    await sql`alter table rh_idempotency_before rename to rh_idempotency`.execute(db);
    await sql`delete from rh_migrations where version = 20`.execute(db);
    assert.deepEqual(await migrate(db, t.database.dialect), [20]);

    const count = (await sql<{ n: number | string }>`select count(*) as n from rh_idempotency`.execute(db)).rows[0].n;
    assert.equal(Number(count), 1202);
    // Each found by its hash, as kept.
    for (const n of [0, 499, 500, 1199]) {
      const kept = await t.app.idempotency.find(keyId, `bulk-${String(n).padStart(4, '0')}`);
      assert.equal(kept?.body, `{"n":${n}}`);
    }
    const again = await t.post('/api/tables/orders/rows', { values: { title: 'before the upgrade' } }, withKey('across-upgrade'));
    assert.equal(again.status, 201);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.deepEqual(again.body, created.body);
    const patchedAgain = await t.patch(`/api/tables/orders/rows/${created.body.id}`, { values: { title: 'patched' } }, withKey('patch-across'));
    assert.equal(patchedAgain.headers['idempotent-replayed'], 'true');
    assert.equal(patchedAgain.text, patched.text);
    // Another body under a key kept before the upgrade: still the 422.
    assert.equal((await t.post('/api/tables/orders/rows', { values: { title: 'other' } }, withKey('across-upgrade'))).status, 422);
    // One row was written for the create, however often it was sent.
    const rows = (await t.get('/api/tables/orders/rows')).body.data as { values: { title: string } }[];
    assert.equal(rows.length, 1);
    // New keys are kept and replayed after it.
    const fresh = await t.post('/api/tables/orders/rows', { values: { title: 'after' } }, withKey('after-upgrade'));
    assert.equal(fresh.status, 201);
    assert.equal((await t.post('/api/tables/orders/rows', { values: { title: 'after' } }, withKey('after-upgrade'))).headers['idempotent-replayed'], 'true');
  });

  it("never answers a key by another key's record of the same hash: a live one makes it a 409 that writes nothing, an expired one gives way", async () => {
    // Another key's record under this key's hash (a collision of 64-bit hashes, made here).
    const db = t.database.db;
    const keyId = (await t.get('/api/api-keys/me')).body.id as string;
    const plant = (key: string, expiresAt: string) =>
      db
        .insertInto('rh_idempotency')
        .values({ keyHash: keyHashOf(keyId, key), keyId: 'another-api-key', key: 'another key', method: 'POST', path: '/api/tables/orders/rows', bodyHash: 'h', status: 201, contentType: 'application/json', body: '{"not":"yours"}', createdAt: expiresAt, expiresAt })
        .execute();
    const titles = async () => ((await t.get('/api/tables/orders/rows?pageSize=100')).body.data as { values: { title: string } }[]).map((r) => r.values.title);
    await plant('collides', new Date(Date.now() + 3600_000).toISOString());
    for (let attempt = 0; attempt < 2; attempt++) {
      const refused = await t.post('/api/tables/orders/rows', { values: { title: 'collided' } }, withKey('collides'));
      assert.equal(refused.status, 409, refused.text);
      assert.equal(refused.body.error, 'Conflict');
      assert.match(refused.body.message, /Idempotency-Key "collides"/);
      assert.equal(refused.headers['idempotent-replayed'], undefined);
    }
    assert.ok(!(await titles()).includes('collided'), 'a refused create wrote its row');
    await db.deleteFrom('rh_idempotency').where('key', '=', 'another key').execute();

    await plant('gives-way', new Date(Date.now() - 1000).toISOString());
    const ran = await t.post('/api/tables/orders/rows', { values: { title: 'ran' } }, withKey('gives-way'));
    assert.equal(ran.status, 201, ran.text);
    const replayed = await t.post('/api/tables/orders/rows', { values: { title: 'ran' } }, withKey('gives-way'));
    assert.equal(replayed.headers['idempotent-replayed'], 'true');
    assert.equal(replayed.text, ran.text);
    assert.equal((await titles()).filter((title) => title === 'ran').length, 1);
  });
});
