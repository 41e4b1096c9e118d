import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { dataChecksum } from '../support/data-checksum.ts';
import { type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';
import { makeKey } from './keys.ts';

/**
 * No escalation beyond scopes and tables (CONTRACT §12, docs/api.md "No escalation"): a key gives
 * no key a looser rate limit than the one it is held to (its own, else ROWHOUSE_RATE_LIMIT's), its
 * own included; and only a key with resources:write (or *) makes keys for another member.
 */

const WHY = 'a key can give another key only a rate limit within its own, no faster and with no larger burst';
const limited = (mine: string, asked: string) => `this key's rate limit (${mine}) is lower than the key it asks for (${asked}): ${WHY}`;
const MEMBER = 'this key lacks resources:write: a key can make keys for another member (memberId) only with resources:write';

eachDatabase('no escalation through the rate limit or memberId', (kind) => {
  describe('without a default rate limit', () => {
    let t: TestApp;
    before(async () => {
      t = await startApp(kind);
    });
    after(() => t.close());

    it('refuses a limited key a key with no limit, a faster one or a larger burst, and writes nothing', async () => {
      // Every scope on every table: only its limit holds it back.
      const manager = await makeKey(t, ['*'], ['*'], { rateLimit: { requests: 60, perSeconds: 60 } });
      const cases: [Record<string, unknown>, string][] = [
        [{}, 'unlimited'],
        [{ rateLimit: null }, 'unlimited'],
        [{ rateLimit: { requests: 120, perSeconds: 60 } }, '120 per 60 s'],
        [{ rateLimit: { requests: 61, perSeconds: 60 } }, '61 per 60 s'],
        // The same rate, a larger burst; and a slower rate with a larger burst.
        [{ rateLimit: { requests: 120, perSeconds: 120 } }, '120 per 120 s'],
        [{ rateLimit: { requests: 61, perSeconds: 3600 } }, '61 per 3600 s'],
      ];
      const before = await dataChecksum(t);
      for (const [body, asked] of cases) {
        const r = expectError(await t.post('/api/api-keys', { name: 'more', ...body }, { key: manager }), 403);
        assert.equal(r.message, limited('60 per 60 s', asked), JSON.stringify(body));
      }
      const many = [{ name: 'ok', rateLimit: { requests: 10, perSeconds: 60 } }, { name: 'open' }];
      assert.equal(expectError(await t.post('/api/api-keys/create-many', many, { key: manager }), 403).message, `[1]: ${limited('60 per 60 s', 'unlimited')}`);
      assert.equal(await dataChecksum(t), before);
      // Within it: the same, slower, a smaller burst.
      for (const rateLimit of [{ requests: 60, perSeconds: 60 }, { requests: 10, perSeconds: 60 }, { requests: 60, perSeconds: 120 }, { requests: 1, perSeconds: 1 }]) {
        const made = await t.post('/api/api-keys', { name: 'within', rateLimit }, { key: manager });
        assert.equal(made.status, 201, `${JSON.stringify(rateLimit)}: ${made.text}`);
        assert.deepEqual(made.body.rateLimit, rateLimit);
      }
    });

    it('lets a limited key tighten its own limit, not clear or loosen it; nor loosen, change or delete a looser key', async () => {
      const manager = await makeKey(t, ['*'], ['*'], { rateLimit: { requests: 60, perSeconds: 60 } });
      const me = (await t.get('/api/api-keys/me', { key: manager })).body.id as string;
      const other = await t.post('/api/api-keys', { name: 'other', rateLimit: { requests: 10, perSeconds: 60 } }, { key: manager });
      assert.equal(other.status, 201, other.text);
      const full = (await t.get('/api/api-keys/me')).body.id as string;
      const before = await dataChecksum(t);
      for (const [id, rateLimit, message] of [
        [me, null, limited('60 per 60 s', 'unlimited')],
        [me, { requests: 61, perSeconds: 60 }, limited('60 per 60 s', '61 per 60 s')],
        [other.body.id, null, limited('60 per 60 s', 'unlimited')],
        [other.body.id, { requests: 100, perSeconds: 10 }, limited('60 per 60 s', '100 per 10 s')],
      ] as const) {
        assert.equal(expectError(await t.put(`/api/api-keys/${id}`, { rateLimit }, { key: manager }), 403).message, message);
      }
      expectError(await t.put('/api/api-keys/update-many', [{ id: other.body.id, rateLimit: null }], { key: manager }), 403);
      // The unlimited key is beyond it: not renamed, revoked or deleted by it.
      assert.equal(expectError(await t.put(`/api/api-keys/${full}`, { name: 'mine now' }, { key: manager }), 403).message, limited('60 per 60 s', 'unlimited'));
      expectError(await t.put(`/api/api-keys/${full}`, { revokedAt: new Date().toISOString() }, { key: manager }), 403);
      expectError(await t.delete(`/api/api-keys/${full}`, undefined, { key: manager }), 403);
      assert.equal(await dataChecksum(t), before);

      assert.equal((await t.put(`/api/api-keys/${other.body.id}`, { rateLimit: { requests: 5, perSeconds: 60 } }, { key: manager })).status, 200);
      const tightened = await t.put(`/api/api-keys/${me}`, { rateLimit: { requests: 30, perSeconds: 60 } }, { key: manager });
      assert.equal(tightened.status, 200, tightened.text);
      // Held to 30 now, it cannot go back to 60.
      const back = expectError(await t.put(`/api/api-keys/${me}`, { rateLimit: { requests: 60, perSeconds: 60 } }, { key: manager }), 403);
      assert.equal(back.message, limited('30 per 60 s', '60 per 60 s'));
      assert.equal((await t.delete(`/api/api-keys/${other.body.id}`, undefined, { key: manager })).status, 200);
      // A key without any limit is not held back.
      assert.equal((await t.put(`/api/api-keys/${me}`, { rateLimit: null })).status, 200);
    });

    it('lets only a key with resources:write (or *) make a key for another member', async () => {
      const member = await t.post('/api/members', { name: 'Someone else' });
      assert.equal(member.status, 201, member.text);
      const manager = await makeKey(t, ['keys:manage', 'rows:read']);
      const before = await dataChecksum(t);
      const body = { name: 'as someone else', scopes: ['rows:read'], memberId: member.body.id };
      assert.equal(expectError(await t.post('/api/api-keys', body, { key: manager }), 403).message, MEMBER);
      // A member that does not exist: the same 403, which says nothing of who exists.
      assert.equal(expectError(await t.post('/api/api-keys', { ...body, memberId: '00000000-0000-4000-8000-000000000000' }, { key: manager }), 403).message, MEMBER);
      const many = [{ name: 'mine', scopes: ['rows:read'] }, body];
      assert.equal(expectError(await t.post('/api/api-keys/create-many', many, { key: manager }), 403).message, `[1]: ${MEMBER}`);
      assert.equal(await dataChecksum(t), before);
      // Its own member, named or left out, it may.
      for (const extra of [{}, { memberId: t.ownerId }]) {
        const own = await t.post('/api/api-keys', { name: 'mine', scopes: ['rows:read'], ...extra }, { key: manager });
        assert.equal(own.status, 201, own.text);
        assert.equal(own.body.memberId, t.ownerId);
      }
      // resources:write, or *, may; the key made writes as that member.
      const admin = await makeKey(t, ['keys:manage', 'resources:write', 'rows:read']);
      for (const key of [admin, undefined]) {
        const made = await t.post('/api/api-keys', body, { key });
        assert.equal(made.status, 201, made.text);
        assert.equal(made.body.memberId, member.body.id);
      }
      // resources:write still checks that the member exists.
      expectError(await t.post('/api/api-keys', { ...body, memberId: '00000000-0000-4000-8000-000000000000' }, { key: admin }), 400);
    });
  });

  describe('with ROWHOUSE_RATE_LIMIT', () => {
    let t: TestApp;
    before(async () => {
      t = await startApp(kind, { ROWHOUSE_RATE_LIMIT: '50/60' });
    });
    after(() => t.close());

    it('holds keys without a limit to the default, on both sides', async () => {
      const before = await dataChecksum(t);
      // The test key has no limit of its own: it is held to the default.
      const faster = expectError(await t.post('/api/api-keys', { name: 'faster', rateLimit: { requests: 100, perSeconds: 60 } }), 403);
      assert.equal(faster.message, limited('50 per 60 s, the default', '100 per 60 s'));
      const me = (await t.get('/api/api-keys/me')).body.id as string;
      expectError(await t.put(`/api/api-keys/${me}`, { rateLimit: { requests: 51, perSeconds: 60 } }), 403);
      assert.equal(await dataChecksum(t), before);
      // A key without one gets the default, which is within the default.
      assert.equal((await t.post('/api/api-keys', { name: 'default' })).status, 201);
      const slower = await makeKey(t, ['*'], ['*'], { rateLimit: { requests: 5, perSeconds: 60 } });
      // Held to 5, it may not make a key the default would let through faster.
      const open = expectError(await t.post('/api/api-keys', { name: 'open' }, { key: slower }), 403);
      assert.equal(open.message, limited('5 per 60 s', '50 per 60 s, the default'));
      // Nor clear its own limit (back to the default).
      const self = (await t.get('/api/api-keys/me', { key: slower })).body.id as string;
      expectError(await t.put(`/api/api-keys/${self}`, { rateLimit: null }, { key: slower }), 403);
      assert.equal((await t.post('/api/api-keys', { name: 'slow', rateLimit: { requests: 5, perSeconds: 600 } }, { key: slower })).status, 201);
    });
  });
});
