import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { generateApiKey, hashApiKey } from '../../src/domain/api-key.ts';
import { insertApiKey } from '../../src/store/auth-store.ts';
import { bootstrap } from '../../src/store/bootstrap.ts';
import { TEST_KEY, type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';

/** Every column of every stored key row, as text. */
async function storedKeyText(t: TestApp): Promise<string[]> {
  const rows = await t.database.db.selectFrom('rh_api_keys').selectAll().execute();
  return rows.flatMap((r) => Object.values(r).map((v) => (v === null ? '' : String(v))));
}

eachDatabase('authentication (CONTRACT §2)', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(kind);
  });
  after(() => t.close());

  it('answers 401 in the error format when X-API-Key is missing, on every method', async () => {
    for (const method of ['GET', 'POST', 'PUT', 'DELETE'] as const) {
      const url = method === 'GET' || method === 'POST' ? '/api/flows' : '/api/flows/some-id';
      const r = await t.request(method, url, { key: null, body: method === 'GET' || method === 'DELETE' ? undefined : { name: 'x' } });
      const body = expectError(r, 401);
      assert.equal(body.error, 'Unauthorized');
      assert.match(String(body.message), /X-API-Key/);
    }
    // Nothing was written by the refused POST.
    assert.equal((await t.get('/api/flows')).body.data.length, 0);
  });

  it('answers 401 for an empty, unknown or malformed key', async () => {
    expectError(await t.get('/api/flows', { key: '' }), 401);
    expectError(await t.get('/api/flows', { key: generateApiKey() }), 401);
    expectError(await t.get('/api/flows', { key: 'not-a-key' }), 401);
    // Almost the right key.
    expectError(await t.get('/api/flows', { key: TEST_KEY.slice(0, -1) }), 401);
    expectError(await t.get('/api/flows', { key: `${TEST_KEY}x` }), 401);
  });

  it('accepts the valid key', async () => {
    const r = await t.get('/api/flows');
    assert.equal(r.status, 200, r.text);
  });

  it('guards unknown /api routes too: 401 without a key, 404 with one', async () => {
    for (const url of ['/api', '/api/', '/api/no-such-resource', '/api/no/such/thing?x=1']) {
      expectError(await t.get(url, { key: null }), 401);
      expectError(await t.get(url), 404);
    }
    expectError(await t.request('PATCH', '/api/flows', { key: null, body: {} }), 401);
  });

  it('cannot be bypassed by percent-encoding the /api prefix', async () => {
    for (const url of ['/%61pi/flows', '/ap%69/flows', '/%61%70%69/flows']) {
      const r = await t.get(url, { key: null });
      assert.notEqual(r.status, 200, `${url} answered without a key: ${r.text}`);
      expectError(r, 401);
    }
  });

  it('does not ask for a key outside /api', async () => {
    const health = await t.get('/healthz', { key: null });
    assert.equal(health.status, 200);
    assert.deepEqual(health.body, { status: 'ok' });
    // A bad key on a public route is ignored, not refused.
    assert.equal((await t.get('/healthz', { key: 'nonsense' })).status, 200);
    assert.equal((await t.get('/readyz', { key: null })).status, 200);
    // Routes merely starting with the letters "api" are not /api routes.
    expectError(await t.get('/apiary', { key: null }), 404);
  });

  it('refuses a revoked key from the next request on', async () => {
    const created = await t.post('/api/api-keys', { name: 'to revoke' });
    assert.equal(created.status, 201, created.text);
    const key = created.body.key as string;
    assert.equal((await t.get('/api/flows', { key })).status, 200);
    const revoked = await t.put(`/api/api-keys/${created.body.id}`, { revokedAt: new Date().toISOString() });
    assert.equal(revoked.status, 200, revoked.text);
    expectError(await t.get('/api/flows', { key }), 401);
    expectError(await t.post('/api/flows', { name: 'x' }, { key }), 401);
  });

  // Another process is another instance: on SQLite it is seen on the next request (the trigger's
  // counter is read on each); on PostgreSQL when its notification arrives, promised within a second.
  it('refuses a key revoked by another connection or process from the next request on (PostgreSQL: within one second), after many uses', async () => {
    const key = generateApiKey();
    await insertApiKey(t.database.db, key, 'elsewhere', t.ownerId);
    // Used repeatedly, so any memo of the lookup is warm.
    for (let i = 0; i < 5; i++) assert.equal((await t.get('/api/flows', { key })).status, 200);
    const url = t.config.databaseUrl;
    if (kind === 'sqlite') {
      const other = new SqliteDatabase(url.slice('sqlite:'.length));
      other.prepare('update rh_api_keys set "revokedAt" = ? where "keyHash" = ?').run(new Date().toISOString(), hashApiKey(key));
      other.close();
    } else {
      const other = new pg.Client({ connectionString: url });
      await other.connect();
      await other.query('update rh_api_keys set "revokedAt" = now() where "keyHash" = $1', [hashApiKey(key)]);
      await other.end();
      const deadline = Date.now() + 1000;
      while ((await t.get('/api/flows', { key })).status === 200 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    }
    expectError(await t.get('/api/flows', { key }), 401);
  });

  it('a revokedAt in the future schedules the revocation; one now or past refuses the key', async () => {
    const made = await t.post('/api/api-keys', { name: 'scheduled' });
    assert.equal(made.status, 201, made.text);
    const key = made.body.key as string;
    const later = new Date(Date.now() + 3_600_000).toISOString();
    assert.equal((await t.put(`/api/api-keys/${made.body.id}`, { revokedAt: later })).status, 200);
    assert.equal((await t.get('/api/flows', { key })).status, 200);
    assert.equal((await t.put(`/api/api-keys/${made.body.id}`, { revokedAt: new Date(Date.now() - 1000).toISOString() })).status, 200);
    expectError(await t.get('/api/flows', { key }), 401);
  });

  it('refuses an expired key and accepts one expiring in the future', async () => {
    const soon = await t.post('/api/api-keys', { name: 'future', expiresAt: new Date(Date.now() + 3600_000).toISOString() });
    assert.equal(soon.status, 201, soon.text);
    assert.equal((await t.get('/api/flows', { key: soon.body.key })).status, 200);

    const key = generateApiKey();
    const id = await insertApiKey(t.database.db, key, 'expired', t.ownerId);
    assert.equal((await t.get('/api/flows', { key })).status, 200);
    await t.database.db
      .updateTable('rh_api_keys')
      .set({ expiresAt: new Date(Date.now() - 1000).toISOString() })
      .where('id', '=', id)
      .execute();
    const r = expectError(await t.get('/api/flows', { key }), 401);
    assert.match(String(r.message), /X-API-Key/);
  });

  it('keeps ROWHOUSE_API_KEY revoked across a restart once it has been revoked', async () => {
    const key = 'env-configured-key-0123456789';
    await bootstrap(t.database.db, { secret: null, apiKey: key });
    assert.equal((await t.get('/api/flows', { key })).status, 200);
    await t.database.db.updateTable('rh_api_keys').set({ revokedAt: new Date().toISOString() }).where('keyHash', '=', hashApiKey(key)).execute();
    expectError(await t.get('/api/flows', { key }), 401);
    // The next start with the same setting does not bring it back, nor make a second copy.
    await bootstrap(t.database.db, { secret: null, apiKey: key });
    expectError(await t.get('/api/flows', { key }), 401);
    const copies = await t.database.db.selectFrom('rh_api_keys').select('id').where('keyHash', '=', hashApiKey(key)).execute();
    assert.equal(copies.length, 1);
  });

  it('stores keys only as hashes, and never shows the hash', async () => {
    const created = await t.post('/api/api-keys', { name: 'hash check' });
    assert.equal(created.status, 201, created.text);
    const key = created.body.key as string;
    assert.match(key, /^rh_[0-9A-Za-z]{40}$/);
    assert.equal((await t.get('/api/flows', { key })).status, 200);

    const stored = await storedKeyText(t);
    for (const k of [TEST_KEY, key]) {
      assert.ok(!stored.some((v) => v.includes(k)), `the key ${k} is stored in clear`);
      assert.ok(stored.includes(hashApiKey(k)), 'the key hash is stored');
    }
    // Not even a reversible encoding of the whole key.
    for (const encoded of [Buffer.from(key).toString('base64'), Buffer.from(key).toString('hex')]) {
      assert.ok(!stored.some((v) => v.includes(encoded)));
    }

    // The key is answered once, on create: neither it nor its hash comes back on read or list.
    const one = await t.get(`/api/api-keys/${created.body.id}`);
    const list = await t.get('/api/api-keys');
    for (const r of [one, list]) {
      assert.equal(r.status, 200, r.text);
      assert.ok(!r.text.includes(key));
      assert.ok(!r.text.includes(TEST_KEY));
      assert.ok(!r.text.includes(hashApiKey(key)));
      assert.ok(!r.text.includes('keyHash'));
    }
    assert.equal(one.body.key, undefined);
  });

  it('makes the key\'s member the createdBy/updatedBy of what it writes', async () => {
    const member = await t.post('/api/members', { name: 'Automation' });
    assert.equal(member.status, 201, member.text);
    const memberId = member.body.id as string;
    assert.notEqual(memberId, t.ownerId);
    const keyed = await t.post('/api/api-keys', { name: 'automation', memberId });
    assert.equal(keyed.status, 201, keyed.text);
    assert.equal(keyed.body.memberId, memberId);
    const key = keyed.body.key as string;

    const flow = await t.post('/api/flows', { name: 'by automation' }, { key });
    assert.equal(flow.status, 201, flow.text);
    assert.equal(flow.body.createdBy, memberId);
    assert.equal(flow.body.updatedBy, memberId);

    // The owner's key updates it: updatedBy moves, createdBy stays.
    const updated = await t.put(`/api/flows/${flow.body.id}`, { description: 'touched' });
    assert.equal(updated.status, 200, updated.text);
    assert.equal(updated.body.createdBy, memberId);
    assert.equal(updated.body.updatedBy, t.ownerId);

    const stored = await t.database.db.selectFrom('rh_flows').select(['createdBy', 'updatedBy']).where('id', '=', flow.body.id).executeTakeFirstOrThrow();
    assert.deepEqual(stored, { createdBy: memberId, updatedBy: t.ownerId });

    // And the owner key's own writes are the owner's.
    const own = await t.post('/api/environment-variables', { name: 'OWNED', value: '1' });
    assert.equal(own.status, 201, own.text);
    assert.equal(own.body.createdBy, t.ownerId);

    // A key created without memberId belongs to the member whose key created it.
    const child = await t.post('/api/api-keys', { name: 'child' }, { key });
    assert.equal(child.status, 201, child.text);
    assert.equal(child.body.memberId, memberId);
  });
});
