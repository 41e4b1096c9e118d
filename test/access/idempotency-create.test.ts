import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { dataChecksum } from '../support/data-checksum.ts';
import { type TestApp, allRows, eachDatabase, expectError, startApp, withKey } from '../support/harness.ts';
import type { IdempotencyStore } from '../../src/store/idempotency-store.ts';
import { EVERY_TYPE_FIELDS } from '../support/every-type.ts';

/**
 * Idempotency-Key on a single-row create (CONTRACT §12), whose answer (its row's record, 201) is
 * kept by the create's own write (http/idempotency.ts keptByCreate, store/request-transaction.ts
 * AnswerKeptByWrite): no lookup and no transaction of its own, and whenever that cannot hold (the key
 * has a record, the create is refused, or it is no plain create) the request runs again the general
 * way. The general rules stay those of test/access/idempotency.test.ts, which runs through this path too.
 */

const VALUES = {
  title: 'All types ✓ "quoted" \\ back',
  amount: -12.5,
  done: false,
  at: '2024-02-29T23:59:59.5+02:00',
  day: '2024-02-29',
  clock: '07:05:09',
  month: '2024-02',
  color: 'green',
  meta: { b: 1, a: [true, null, 'x'], nested: { z: 'ü' } },
  tags: ['x', 'y'],
};

type StoreCalls = Record<'find' | 'open' | 'claim' | 'keep', number>;

/** Counts the calls an app makes to its idempotency store's lookups and keeps (the general path's steps). */
function countCalls(store: IdempotencyStore): StoreCalls {
  const calls: StoreCalls = { find: 0, open: 0, claim: 0, keep: 0 };
  for (const name of Object.keys(calls) as (keyof StoreCalls)[]) {
    const real = store[name].bind(store) as (...args: unknown[]) => unknown;
    (store as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
      calls[name]++;
      return real(...args);
    };
  }
  return calls;
}

const total = (calls: StoreCalls) => calls.find + calls.open + calls.claim + calls.keep;

eachDatabase('Idempotency-Key: a create keeps its answer with its write', (kind) => {
  let t: TestApp;
  let calls: StoreCalls;
  /** PostgreSQL: the statements the app sends, while `statements` is set. */
  let statements: string[] | undefined;
  let n = 0;
  const fresh = () => `create-key-${++n}-${Math.random().toString(36).slice(2)}`;

  before(async () => {
    t = await startApp(kind, {}, { onQuery: (sql) => statements?.push(sql) });
    calls = countCalls(t.app.idempotency);
    const made = await t.post('/api/tables', { code: 'typed', name: 'Typed', fields: EVERY_TYPE_FIELDS });
    assert.equal(made.status, 201, made.text);
    const files = await t.post('/api/tables', { code: 'papers', name: 'Papers', fields: [{ code: 'title', type: 'text' }, { code: 'doc', type: 'file' }] });
    assert.equal(files.status, 201, files.text);
    const links = await t.post('/api/tables', { code: 'notes', name: 'Notes', fields: [{ code: 'title', type: 'text' }, { code: 'ref', type: 'link', options: { table: 'papers' } }] });
    assert.equal(links.status, 201, links.text);
  });
  after(() => t.close());

  it('writes a create with its answer in one step (no lookup, no transaction), and replays it byte for byte', async () => {
    const key = fresh();
    const before = { ...calls };
    statements = [];
    const first = await t.post('/api/tables/typed/rows', { values: VALUES }, withKey(key));
    const sent = statements;
    statements = undefined;
    assert.equal(first.status, 201, first.text);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    assert.equal(total(calls) - total(before), 0, 'the general path looked the key up or kept the answer itself');
    if (kind === 'postgres') {
      // One statement holds the answer, the row and its entry.
      const keeping = sent.filter((s) => s.includes('rh_idempotency'));
      assert.equal(keeping.length, 1, sent.join('\n'));
      assert.match(keeping[0], /insert into rh_changes/);
      assert.ok(!sent.some((s) => /pg_try_advisory/.test(s)), sent.join('\n'));
    }
    const kept = await t.database.db.selectFrom('rh_idempotency').selectAll().where('key', '=', key).executeTakeFirstOrThrow();
    assert.equal(Number(kept.status), 201);
    assert.equal(kept.body, first.text);
    assert.match(String(kept.contentType), /^application\/json/);

    const checksum = await dataChecksum(t);
    const again = await t.post('/api/tables/typed/rows', { values: VALUES }, withKey(key));
    assert.equal(again.status, 201);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.text, first.text);
    assert.equal(String(again.headers['content-type']), String(first.headers['content-type']));
    assert.equal(await dataChecksum(t), checksum, 'a replay wrote');
    // The answer is the row as read back.
    const read = await t.get(`/api/tables/typed/rows/${first.body.id}`);
    assert.deepEqual(read.body, first.body);
    // Its change entry, once.
    const feed = await t.get('/api/tables/typed/changes?limit=1000');
    assert.equal(feed.body.data.filter((c: { rowId: string }) => c.rowId === first.body.id).length, 1);
  });

  it('a create refused (400, 409) keeps its answer and answers it again; another body under its key is a 422', async () => {
    const bad = fresh();
    const refused = expectError(await t.post('/api/tables/typed/rows', { values: { title: 'x', amount: 'many' } }, withKey(bad)), 400);
    const again = await t.post('/api/tables/typed/rows', { values: { title: 'x', amount: 'many' } }, withKey(bad));
    assert.equal(again.status, 400);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.deepEqual(again.body, refused);
    expectError(await t.post('/api/tables/typed/rows', { values: { title: 'x', amount: 1 } }, withKey(bad)), 422);

    assert.equal((await t.post('/api/tables/typed/rows', { id: 'taken-1', values: { title: 'a' } })).status, 201);
    const dup = fresh();
    expectError(await t.post('/api/tables/typed/rows', { id: 'taken-1', values: { title: 'b' } }, withKey(dup)), 409);
    assert.equal((await t.delete('/api/tables/typed/rows/taken-1')).status, 204);
    const replayed = await t.post('/api/tables/typed/rows', { id: 'taken-1', values: { title: 'b' } }, withKey(dup));
    assert.equal(replayed.status, 409);
    assert.equal(replayed.headers['idempotent-replayed'], 'true');
    assert.equal((await t.get('/api/tables/typed/rows/taken-1')).status, 404, 'the replay wrote the row');

    // A create answered by its write, then another body, path or method under its key: 422, nothing written.
    const key = fresh();
    assert.equal((await t.post('/api/tables/typed/rows', { values: { title: 'one' } }, withKey(key))).status, 201);
    const checksum = await dataChecksum(t);
    expectError(await t.post('/api/tables/typed/rows', { values: { title: 'two' } }, withKey(key)), 422);
    expectError(await t.post('/api/tables/papers/rows', { values: { title: 'one' } }, withKey(key)), 422);
    expectError(await t.post('/api/tables/typed/rows-bulk', { data: [{ values: { title: 'one' } }] }, withKey(key)), 422);
    assert.equal(await dataChecksum(t), checksum);
  });

  it('creates it cannot keep so (an upsert, `expand` on a table with links, a table with files) run the general way, once, and replay', async () => {
    assert.equal((await t.post('/api/tables/typed/rows', { id: 'up-1', values: { title: 'before' } })).status, 201);
    const cases: [string, unknown][] = [
      ['/api/tables/typed/rows', { id: 'up-1', values: { title: 'after' }, options: { upsert: true } }],
      ['/api/tables/typed/rows', { id: 'up-2', values: { title: 'new' }, options: { upsert: true } }],
      ['/api/tables/notes/rows?expand=ref', { values: { title: 'expanding' } }],
      ['/api/tables/papers/rows', { values: { title: 'paper' } }],
    ];
    for (const [url, body] of cases) {
      const key = fresh();
      const before = { ...calls };
      const first = await t.post(url, body, withKey(key));
      assert.ok(first.status === 200 || first.status === 201, `${url} ${JSON.stringify(body)}: ${first.status} ${first.text}`);
      assert.ok(calls.keep + calls.claim > before.keep + before.claim, `${url}: kept the general way`);
      const checksum = await dataChecksum(t);
      const again = await t.post(url, body, withKey(key));
      assert.equal(again.status, first.status, url);
      assert.equal(again.headers['idempotent-replayed'], 'true', url);
      assert.equal(again.text, first.text, url);
      assert.equal(await dataChecksum(t), checksum, `${url}: a replay wrote`);
    }
    assert.equal((await allRows(t, 'papers')).filter((r) => r.values.title === 'paper').length, 1);
  });

  it('the same create sent many times at once with one key writes one row (the rest: 409 in flight, or the replay)', async () => {
    for (let round = 0; round < 3; round++) {
      const key = fresh();
      const title = `at once ${key}`;
      const answers = await Promise.all(Array.from({ length: 6 }, () => t.post('/api/tables/typed/rows', { values: { title } }, withKey(key))));
      for (const a of answers) assert.ok(a.status === 201 || a.status === 409, `${a.status} ${a.text}`);
      const firsts = answers.filter((a) => a.status === 201 && a.headers['idempotent-replayed'] === undefined);
      assert.equal(firsts.length, 1, answers.map((a) => `${a.status}:${a.headers['idempotent-replayed']}`).join(' '));
      for (const a of answers.filter((a) => a.status === 201)) assert.equal(a.text, firsts[0].text);
      assert.equal((await allRows(t, 'typed')).filter((r) => r.values.title === title).length, 1);
    }
  });

  it('a key whose answer expired: the create runs again and keeps its new answer', async () => {
    const key = fresh();
    const first = await t.post('/api/tables/typed/rows', { values: { title: 'expiring' } }, withKey(key));
    assert.equal(first.status, 201);
    await t.database.db.updateTable('rh_idempotency').set({ expiresAt: new Date(Date.now() - 1000).toISOString() }).where('key', '=', key).execute();
    const second = await t.post('/api/tables/typed/rows', { values: { title: 'expiring' } }, withKey(key));
    assert.equal(second.status, 201, second.text);
    assert.equal(second.headers['idempotent-replayed'], undefined);
    assert.notEqual(second.body.id, first.body.id);
    const third = await t.post('/api/tables/typed/rows', { values: { title: 'expiring' } }, withKey(key));
    assert.equal(third.headers['idempotent-replayed'], 'true');
    assert.equal(third.text, second.text);
  });

  it('on PostgreSQL, two instances given the same create and key at once write one row', { skip: kind !== 'postgres' && 'two instances share PostgreSQL' }, async () => {
    const second = await startApp(kind, {}, { sharing: t });
    try {
      for (let round = 0; round < 10; round++) {
        const key = fresh();
        const title = `twin ${key}`;
        const answers = await Promise.all([t, second, t, second].map((app) => app.post('/api/tables/typed/rows', { values: { title } }, withKey(key))));
        for (const a of answers) assert.ok(a.status === 201 || a.status === 409, `${a.status} ${a.text}`);
        const firsts = answers.filter((a) => a.status === 201 && a.headers['idempotent-replayed'] === undefined);
        assert.equal(firsts.length, 1, `round ${round}: ${answers.map((a) => `${a.status}:${a.headers['idempotent-replayed']}`).join(' ')}`);
        for (const a of answers.filter((a) => a.status === 201)) assert.equal(a.text, firsts[0].text);
        assert.equal((await allRows(t, 'typed')).filter((r) => r.values.title === title).length, 1, `round ${round}`);
      }
    } finally {
      await second.close();
    }
  });
});
