import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { dataChecksum } from '../support/data-checksum.ts';
import { type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';
import { makeKey } from './keys.ts';

/** Rate limits per key (CONTRACT §12): the headers, 429 with Retry-After, keys apart, the default, changes by PUT. */

eachDatabase('rate limits', (kind) => {
  let t: TestApp;

  before(async () => {
    t = await startApp(kind);
    assert.equal((await t.post('/api/tables', { code: 'things', name: 'Things', fields: [{ code: 'title', type: 'text' }] })).status, 201);
  });
  after(() => t.close());

  it('leaves a key without a limit alone when there is no default', async () => {
    const r = await t.get('/api/tables/things/rows');
    assert.equal(r.status, 200);
    assert.equal(r.headers['ratelimit'], undefined);
    assert.equal(r.headers['ratelimit-policy'], undefined);
  });

  it('answers with the headers, then 429 with Retry-After once the key has used its requests, and changes nothing', async () => {
    const key = await makeKey(t, ['*'], ['*'], { rateLimit: { requests: 3, perSeconds: 60 } });
    const remaining: number[] = [];
    for (let i = 0; i < 3; i++) {
      // A 404 is an answer too, and counts.
      const r = await t.get(i === 1 ? '/api/tables/things/rows/nope' : '/api/tables/things/rows', { key });
      assert.equal(r.status, i === 1 ? 404 : 200, r.text);
      assert.equal(r.headers['ratelimit-policy'], '3;w=60');
      const m = /^limit=3, remaining=(\d+), reset=(\d+)$/.exec(String(r.headers['ratelimit']));
      assert.ok(m, String(r.headers['ratelimit']));
      remaining.push(Number(m[1]));
      assert.ok(Number(m[2]) > 0 && Number(m[2]) <= 60);
    }
    assert.deepEqual(remaining, [2, 1, 0]);
    const before = await dataChecksum(t);
    const over = await t.post('/api/tables/things/rows', { values: { title: 'x' } }, { key });
    const body = expectError(over, 429);
    assert.equal(body.error, 'Too Many Requests');
    assert.match(String(body.message), /3 requests per 60 s/);
    assert.ok(Number(over.headers['retry-after']) >= 1 && Number(over.headers['retry-after']) <= 20, String(over.headers['retry-after']));
    assert.equal(over.headers['ratelimit-policy'], '3;w=60');
    assert.match(String(over.headers['ratelimit']), /^limit=3, remaining=0, reset=\d+$/);
    assert.equal(await dataChecksum(t), before);
    // Another key is not touched by it.
    const other = await makeKey(t, ['*'], ['*'], { rateLimit: { requests: 3, perSeconds: 60 } });
    const r = await t.get('/api/tables/things/rows', { key: other });
    assert.equal(r.status, 200);
    assert.match(String(r.headers['ratelimit']), /^limit=3, remaining=2, /);
    assert.equal((await t.get('/api/tables/things/rows')).status, 200, 'the unlimited key');
  });

  it('refills as time passes', async () => {
    const key = await makeKey(t, ['*'], ['*'], { rateLimit: { requests: 1, perSeconds: 1 } });
    assert.equal((await t.get('/api/tables/things/rows', { key })).status, 200);
    const over = await t.get('/api/tables/things/rows', { key });
    assert.equal(over.status, 429);
    assert.equal(over.headers['retry-after'], '1');
    await new Promise((resolve) => setTimeout(resolve, 1100));
    assert.equal((await t.get('/api/tables/things/rows', { key })).status, 200);
  });

  it('follows a limit set or cleared by PUT', async () => {
    const made = await t.post('/api/api-keys', { name: 'later limited' });
    const key = made.body.key as string;
    assert.equal((await t.get('/api/tables/things/rows', { key })).headers['ratelimit'], undefined);
    assert.equal((await t.put(`/api/api-keys/${made.body.id}`, { rateLimit: { requests: 10, perSeconds: 10 } })).status, 200);
    assert.equal((await t.get('/api/tables/things/rows', { key })).headers['ratelimit-policy'], '10;w=10');
    const cleared = await t.put(`/api/api-keys/${made.body.id}`, { rateLimit: null });
    assert.equal(cleared.status, 200);
    assert.equal(cleared.body.rateLimit, null);
    assert.equal((await t.get('/api/tables/things/rows', { key })).headers['ratelimit'], undefined);
  });

  it('applies ROWHOUSE_RATE_LIMIT to keys without a limit of their own, and a key’s own limit over it', async () => {
    const limited = await startApp(kind, { ROWHOUSE_RATE_LIMIT: '2/60' });
    try {
      const a = await limited.get('/api/api-keys/me');
      assert.equal(a.headers['ratelimit-policy'], '2;w=60');
      assert.equal((await limited.get('/api/api-keys/me')).status, 200);
      expectError(await limited.get('/api/api-keys/me'), 429);
      // The test key is spent: a key of its own limit was made before, through the database.
      const { insertApiKey } = await import('../../src/store/auth-store.ts');
      const own = 'rh_ownlimit_0123456789abcdefghijklmnopqrst';
      const id = await insertApiKey(limited.database.db, own, 'own', limited.ownerId);
      await limited.database.db.updateTable('rh_api_keys').set({ rateLimit: JSON.stringify({ requests: 5, perSeconds: 60 }) }).where('id', '=', id).execute();
      assert.equal((await limited.get('/api/api-keys/me', { key: own })).headers['ratelimit-policy'], '5;w=60');
    } finally {
      await limited.close();
    }
  });
});
