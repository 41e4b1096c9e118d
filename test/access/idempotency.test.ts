import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { after, before, it } from 'node:test';
import { dataChecksum } from '../support/data-checksum.ts';
import { TEST_KEY, type TestApp, allRows, eachDatabase, expectError, startApp, withKey } from '../support/harness.ts';
import { makeKey } from './keys.ts';

/** Idempotency-Key (CONTRACT §12): replays, mismatches, keys in flight, kept 4xx answers, per-key separation, expiry. */

eachDatabase('Idempotency-Key', (kind) => {
  let t: TestApp;
  let n = 0;
  const fresh = () => `key-${++n}-${Math.random().toString(36).slice(2)}`;

  before(async () => {
    t = await startApp(kind);
    const r = await t.post('/api/tables', { code: 'orders', name: 'Orders', fields: [{ code: 'title', type: 'text', required: true }] });
    assert.equal(r.status, 201, r.text);
  });
  after(() => t.close());

  it('runs the first request, and answers a repeat with its stored answer without writing again', async () => {
    const key = fresh();
    const first = await t.post('/api/tables/orders/rows', { values: { title: 'once' } }, withKey(key));
    assert.equal(first.status, 201, first.text);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    const before = await dataChecksum(t);
    const again = await t.post('/api/tables/orders/rows', { values: { title: 'once' } }, withKey(key));
    assert.equal(again.status, 201);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.text, first.text);
    assert.match(String(again.headers['content-type']), /^application\/json/);
    assert.equal(await dataChecksum(t), before, 'a replay wrote');
    assert.equal((await allRows(t, 'orders')).filter((r) => r.values.title === 'once').length, 1);
  });

  it('replays every kind of write: update, delete (204), bulk, batch, resources', async () => {
    const row = await t.post('/api/tables/orders/rows', { id: 'idem-1', values: { title: 'a' } });
    assert.equal(row.status, 201);
    const cases: [string, string, unknown][] = [
      ['PATCH', '/api/tables/orders/rows/idem-1', { values: { title: 'b' } }],
      ['POST', '/api/tables/orders/rows-bulk', { data: [{ values: { title: 'bulk' } }] }],
      ['POST', '/api/rows-batch', { operations: [{ type: 'create', tableId: 'orders', values: { title: 'batch' } }] }],
      ['POST', '/api/environment-variables', { name: 'IDEM', value: 'v' }],
      ['DELETE', '/api/tables/orders/rows/idem-1', undefined],
    ];
    for (const [method, url, body] of cases) {
      const key = fresh();
      const first = await t.request(method as 'POST', url, withKey(key, { body }));
      assert.ok(first.status < 300, `${method} ${url}: ${first.status} ${first.text}`);
      const before = await dataChecksum(t);
      const again = await t.request(method as 'POST', url, withKey(key, { body }));
      assert.equal(again.status, first.status, `${method} ${url}`);
      assert.equal(again.text, first.text, `${method} ${url}`);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(await dataChecksum(t), before, `${method} ${url}: a replay wrote`);
    }
  });

  it('logs each idempotent write once, in order: single-row writes and a batch writing one row twice', async () => {
    const made = await t.post('/api/tables', { code: 'logged', name: 'Logged', fields: [{ code: 'title', type: 'text' }] });
    assert.equal(made.status, 201, made.text);
    const writes: [string, string, unknown][] = [
      ['POST', '/api/tables/logged/rows', { id: 'x', values: { title: 'one' } }],
      ['PATCH', '/api/tables/logged/rows/x', { values: { title: 'two' } }],
      ['POST', '/api/rows-batch', { operations: [{ type: 'create', tableId: 'logged', id: 'y', values: { title: 'three' } }, { type: 'update', tableId: 'logged', id: 'y', values: { title: 'four' } }] }],
      ['DELETE', '/api/tables/logged/rows/x', undefined],
    ];
    for (const [method, url, body] of writes) {
      const key = fresh();
      for (let k = 0; k < 2; k++) {
        const r = await t.request(method as 'POST', url, withKey(key, { body }));
        assert.ok(r.status < 300, `${method} ${url}: ${r.status} ${r.text}`);
      }
    }
    const feed = await t.get('/api/tables/logged/changes?limit=100');
    assert.equal(feed.status, 200, feed.text);
    const entries = feed.body.data as { type: string; rowId: string; sequence: number }[];
    assert.deepEqual(entries.map((c) => `${c.type}:${c.rowId}`), ['create:x', 'update:x', 'create:y', 'update:y', 'delete:x']);
    assert.deepEqual(entries.map((c) => c.sequence), [...entries.map((c) => c.sequence)].sort((a, b) => a - b));
  });

  it('runs many idempotent creates at once, more than begin their transactions early, each once', async () => {
    const keys = Array.from({ length: 16 }, () => fresh());
    const send = () => Promise.all(keys.map((key, k) => t.post('/api/tables/orders/rows', { id: `many-${k}`, values: { title: `many ${k}` } }, withKey(key))));
    const first = await send();
    for (const r of first) assert.equal(r.status, 201, r.text);
    const again = await send();
    for (const [k, r] of again.entries()) {
      assert.equal(r.headers['idempotent-replayed'], 'true');
      assert.equal(r.text, first[k].text);
    }
    assert.equal((await allRows(t, 'orders')).filter((r) => String(r.id).startsWith('many-')).length, 16);
  });

  it('answers 422 for the same key with another body, path or method, and writes nothing', async () => {
    const key = fresh();
    assert.equal((await t.post('/api/tables/orders/rows', { values: { title: 'x' } }, withKey(key))).status, 201);
    const before = await dataChecksum(t);
    const body = expectError(await t.post('/api/tables/orders/rows', { values: { title: 'y' } }, withKey(key)), 422);
    assert.match(String(body.message), /Idempotency-Key .* was used for another request \(another body\)/);
    expectError(await t.post('/api/tables/orders/rows-bulk', { data: [{ values: { title: 'x' } }] }, withKey(key)), 422);
    expectError(await t.put('/api/tables/orders', { name: 'x' }, withKey(key)), 422);
    assert.equal(await dataChecksum(t), before);
  });

  it('keeps a 4xx answer too, and answers it again', async () => {
    const key = fresh();
    const bad = expectError(await t.post('/api/tables/orders/rows', { values: { title: 5 } }, withKey(key)), 400);
    const again = await t.post('/api/tables/orders/rows', { values: { title: 5 } }, withKey(key));
    assert.equal(again.status, 400);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.deepEqual(again.body, bad);
    // A 409 from a row that exists is kept; the row written meanwhile by another does not change it.
    const dupKey = fresh();
    assert.equal((await t.post('/api/tables/orders/rows', { id: 'taken', values: { title: 'a' } })).status, 201);
    assert.equal((await t.post('/api/tables/orders/rows', { id: 'taken', values: { title: 'b' } }, withKey(dupKey))).status, 409);
    assert.equal((await t.delete('/api/tables/orders/rows/taken')).status, 204);
    const replayed = await t.post('/api/tables/orders/rows', { id: 'taken', values: { title: 'b' } }, withKey(dupKey));
    assert.equal(replayed.status, 409);
    assert.equal(replayed.headers['idempotent-replayed'], 'true');
  });

  it('keeps the keys of different API keys apart', async () => {
    const key = fresh();
    const other = await makeKey(t, ['rows:create', 'rows:read']);
    const a = await t.post('/api/tables/orders/rows', { values: { title: 'per key' } }, withKey(key));
    const b = await t.post('/api/tables/orders/rows', { values: { title: 'per key' } }, withKey(key, { key: other }));
    assert.equal(a.status, 201);
    assert.equal(b.status, 201);
    assert.equal(b.headers['idempotent-replayed'], undefined);
    assert.notEqual(a.body.id, b.body.id);
    // And another body under the same key of the other API key is no mismatch of the first's.
    assert.equal((await t.post('/api/tables/orders/rows', { values: { title: 'else' } }, withKey(fresh(), { key: other }))).status, 201);
  });

  it('answers 409 to a repeat while the first is still running', async () => {
    const key = fresh();
    // An import whose file is still arriving: its request runs until the body ends.
    const file = new PassThrough();
    file.write('title\nfirst\n');
    const url = '/api/tables/orders/rows-import?format=csv&encoding=utf8';
    const headers = { 'content-type': 'text/csv', 'idempotency-key': key, 'x-api-key': TEST_KEY };
    const running = t.app.inject({ method: 'POST', url, headers, payload: file });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const repeat = expectError(await t.request('POST', url, { raw: 'title\nfirst\nsecond\n', headers: { 'content-type': 'text/csv', 'idempotency-key': key } }), 409);
    assert.match(String(repeat.message), /is still running/);
    file.end('second\n');
    const done = await running;
    assert.equal(done.statusCode, 200, done.body);
    assert.equal(JSON.parse(done.body).created, 2);
    // The 409 was not kept: the repeat now gets the first's answer.
    const replay = await t.request('POST', url, { raw: 'title\nfirst\nsecond\n', headers: { 'content-type': 'text/csv', 'idempotency-key': key } });
    assert.equal(replay.status, 200);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.text, done.body);
    expectError(await t.request('POST', url, { raw: 'title\nother\n', headers: { 'content-type': 'text/csv', 'idempotency-key': key } }), 422);
  });

  it('keeps a non-atomic import whole: a chunk that fails is rolled back alone, with its change entries', async () => {
    const made = await t.post('/api/tables', { code: 'partial', name: 'Partial', fields: [{ code: 'title', type: 'text' }] });
    assert.equal(made.status, 201, made.text);
    assert.equal((await t.post('/api/tables/partial/rows', { id: 'dup', values: { title: 'before' } })).status, 201);
    const key = fresh();
    const url = '/api/tables/partial/rows-import?format=csv&encoding=utf8&atomic=false';
    const file = 'id,title\na,one\nb,two\ndup,three\nc,four\n';
    const first = await t.request('POST', url, withKey(key, { raw: file, headers: { 'content-type': 'text/csv' } }));
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.created, 3);
    assert.equal(first.body.failed, 1);
    const rows = await allRows(t, 'partial');
    assert.deepEqual(rows.map((r) => `${r.id}:${r.values.title}`).sort(), ['a:one', 'b:two', 'c:four', 'dup:before']);
    // The change log has one create per row there, and none of the rolled-back insert of the failed chunk.
    const feed = await t.get('/api/tables/partial/changes?limit=100');
    assert.equal(feed.status, 200, feed.text);
    assert.deepEqual(feed.body.data.map((c: { type: string; rowId: string }) => `${c.type}:${c.rowId}`).sort(), ['create:a', 'create:b', 'create:c', 'create:dup']);
    const again = await t.request('POST', url, withKey(key, { raw: file, headers: { 'content-type': 'text/csv' } }));
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.text, first.text);
  });

  it('writes the 1,000 rows of a bulk sent several times at once exactly once', async () => {
    const key = fresh();
    const data = Array.from({ length: 1000 }, (_, i) => ({ values: { title: `bulk-${key}-${i}` } }));
    const answers = await Promise.all(Array.from({ length: 4 }, () => t.post('/api/tables/orders/rows-bulk', { data }, withKey(key))));
    for (const a of answers) assert.ok(a.status === 201 || a.status === 409, `${a.status} ${a.text.slice(0, 200)}`);
    assert.equal(answers.filter((a) => a.status === 201 && a.headers['idempotent-replayed'] === undefined).length, 1);
    const rows = (await allRows(t, 'orders')).filter((r) => String(r.values.title).startsWith(`bulk-${key}-`));
    assert.equal(rows.length, 1000);
    const replay = await t.post('/api/tables/orders/rows-bulk', { data }, withKey(key));
    assert.equal(replay.status, 201);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
  });

  it('keeps no 401, 403 or 429: they come before the request runs, and its retry runs once it may', async () => {
    const kept = async (idem: string) => (await t.database.db.selectFrom('rh_idempotency').select('key').where('key', '=', idem).execute()).length;
    // 403: the key lacks rows:create; given it, the retry with the same Idempotency-Key runs, and is kept from then on.
    const reader = await makeKey(t, ['rows:read']);
    const readerId = (await t.get('/api/api-keys/me', { key: reader })).body.id as string;
    const idem = fresh();
    const body = { values: { title: 'after a 403' } };
    expectError(await t.post('/api/tables/orders/rows', body, withKey(idem, { key: reader })), 403);
    assert.equal(await kept(idem), 0);
    assert.equal((await t.put(`/api/api-keys/${readerId}`, { scopes: ['rows:read', 'rows:create'] })).status, 200);
    const ran = await t.post('/api/tables/orders/rows', body, withKey(idem, { key: reader }));
    assert.equal(ran.status, 201, ran.text);
    assert.equal(ran.headers['idempotent-replayed'], undefined);
    const replayed = await t.post('/api/tables/orders/rows', body, withKey(idem, { key: reader }));
    assert.deepEqual([replayed.status, replayed.headers['idempotent-replayed'], replayed.text], [201, 'true', ran.text]);
    // 429: over the key's limit; after Retry-After the retry runs.
    const limited = await makeKey(t, ['*'], ['*'], { rateLimit: { requests: 1, perSeconds: 1 } });
    assert.equal((await t.get('/api/tables/orders', { key: limited })).status, 200);
    const idem2 = fresh();
    const refused = await t.post('/api/tables/orders/rows', { values: { title: 'after a 429' } }, withKey(idem2, { key: limited }));
    expectError(refused, 429);
    assert.equal(await kept(idem2), 0);
    await new Promise((resolve) => setTimeout(resolve, Number(refused.headers['retry-after']) * 1000 + 50));
    const later = await t.post('/api/tables/orders/rows', { values: { title: 'after a 429' } }, withKey(idem2, { key: limited }));
    assert.equal(later.status, 201, later.text);
    assert.equal(later.headers['idempotent-replayed'], undefined);
    // 401: no valid key, nothing to keep it under.
    const idem3 = fresh();
    expectError(await t.post('/api/tables/orders/rows', { values: { title: 'after a 401' } }, withKey(idem3, { key: 'rh_nosuchkey0000000000000000000000000000000' })), 401);
    assert.equal(await kept(idem3), 0);
    assert.equal((await allRows(t, 'orders')).filter((r) => r.values.title === 'after a 401').length, 0);
  });

  it('answers 400 naming the header for an empty, too long or non-ASCII key', async () => {
    const before = await dataChecksum(t);
    for (const key of ['', 'x'.repeat(256), 'caf\u00e9', 'tab\there']) {
      const r = expectError(await t.post('/api/tables/orders/rows', { values: { title: 'z' } }, withKey(key)), 400);
      assert.equal((r.details as { path: string }[])[0].path, 'Idempotency-Key', JSON.stringify(r));
    }
    assert.equal(await dataChecksum(t), before);
    assert.equal((await t.post('/api/tables/orders/rows', { values: { title: 'z' } }, withKey('x'.repeat(255)))).status, 201);
  });

  it('forgets expired answers: the sweep deletes them, and the key runs again', async () => {
    const key = fresh();
    const first = await t.post('/api/tables/orders/rows', { values: { title: 'expiring' } }, withKey(key));
    assert.equal(first.status, 201);
    const { db } = t.database;
    await db.updateTable('rh_idempotency').set({ expiresAt: new Date(Date.now() - 1000).toISOString() }).where('key', '=', key).execute();
    const again = await t.post('/api/tables/orders/rows', { values: { title: 'expiring' } }, withKey(key));
    assert.equal(again.status, 201);
    assert.equal(again.headers['idempotent-replayed'], undefined);
    assert.notEqual(again.body.id, first.body.id);
    await db.updateTable('rh_idempotency').set({ expiresAt: new Date(Date.now() - 1000).toISOString() }).where('key', '=', key).execute();
    assert.ok((await t.app.idempotency.sweep()) >= 1);
    assert.equal((await db.selectFrom('rh_idempotency').select('key').where('key', '=', key).execute()).length, 0);
  });

  it('on PostgreSQL, two instances given the same key at once write once', { skip: kind !== 'postgres' && 'two instances share PostgreSQL' }, async () => {
    const second = await startApp(kind, {}, { sharing: t });
    try {
      for (let round = 0; round < 5; round++) {
        const key = fresh();
        const data = Array.from({ length: 200 }, (_, i) => ({ values: { title: `twin-${key}-${i}` } }));
        const answers = await Promise.all([t, second, t, second].map((app) => app.post('/api/tables/orders/rows-bulk', { data }, withKey(key))));
        for (const a of answers) assert.ok(a.status === 201 || a.status === 409, `${a.status} ${a.text}`);
        const rows = (await allRows(t, 'orders')).filter((r) => String(r.values.title).startsWith(`twin-${key}-`));
        assert.equal(rows.length, 200, `round ${round}: ${answers.map((a) => a.status)}`);
      }
    } finally {
      await second.close();
    }
  });
});
