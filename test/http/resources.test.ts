// The generic resource API (CONTRACT §9, seed spec "Generic resources"): single-item CRUD of
// environment-variables, flows, members and api-keys, the api-key lifecycle (CONTRACT §2) and the
// rules that protect members. Lists are in resources-list, *-many in resources-many, bad input in
// resources-input.
import assert from 'node:assert/strict';
import { STATUS_CODES } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';
import { GENERATED_KEY, ISO_UTC, type Item, UUID, expectStatus, hook, listAll, sleep, unique } from './resources-support.ts';

eachDatabase('resources: single items', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(kind);
  });
  after(() => t.close());

  /** Asserts the audit attributes of a freshly created item. */
  function assertNewItem(item: Item, by: string): void {
    assert.match(item.id, UUID);
    assert.match(item.createdAt as string, ISO_UTC);
    assert.equal(item.updatedAt, item.createdAt);
    assert.equal(item.createdBy, by);
    assert.equal(item.updatedBy, by);
  }

  /** A member and a working key of theirs. */
  async function memberWithKey(): Promise<{ member: Item; key: string; keyItem: Item }> {
    const member = expectStatus(await t.post('/api/members', { name: unique('Member') }), 201);
    const keyItem = expectStatus(await t.post('/api/api-keys', { name: unique('key'), memberId: member.id }), 201);
    return { member, key: keyItem.key as string, keyItem };
  }

  describe('environment-variables', () => {
    it('creates (201 with id and audit attributes), then gets the same item', async () => {
      const before = Date.now();
      const created = expectStatus(await t.post('/api/environment-variables', { name: 'API_URL', value: 'https://x.test', description: 'where' }), 201);
      assertNewItem(created, t.ownerId);
      assert.deepEqual(
        { name: created.name, value: created.value, description: created.description },
        { name: 'API_URL', value: 'https://x.test', description: 'where' },
      );
      const at = Date.parse(created.createdAt);
      assert.ok(at >= before - 1000 && at <= Date.now() + 1000, `createdAt ${created.createdAt} is now`);
      assert.deepEqual(Object.keys(created).sort(), ['createdAt', 'createdBy', 'description', 'id', 'name', 'updatedAt', 'updatedBy', 'value']);
      assert.deepEqual(expectStatus(await t.get(`/api/environment-variables/${created.id}`), 200), created);
    });

    it('defaults description to null', async () => {
      const created = expectStatus(await t.post('/api/environment-variables', { name: unique('NO_DESC'), value: '' }), 201);
      assert.equal(created.description, null);
      assert.equal(created.value, '', 'an empty value is kept as an empty string');
    });

    it('accepts names matching ^[A-Za-z_][A-Za-z0-9_]*$', async () => {
      for (const name of ['A', '_', '_x9', 'abc_DEF_123', 'Z'.repeat(200)]) {
        expectStatus(await t.post('/api/environment-variables', { name, value: 'v' }), 201);
      }
    });

    it('refuses other names with a 400 naming `name`, and stores nothing', async () => {
      const count = (await listAll(t, 'environment-variables')).length;
      for (const name of ['', '1ABC', 'A-B', 'A B', 'A.B', 'ÄB', 'A\n', '$HOME', 'A;B']) {
        const body = expectError(await t.post('/api/environment-variables', { name, value: 'v' }), 400);
        assert.match(body.message as string, /\bname\b/, `message for ${JSON.stringify(name)}`);
      }
      assert.equal((await listAll(t, 'environment-variables')).length, count);
    });

    it('refuses a duplicate name with 409 on create and on update', async () => {
      const name = unique('DUP');
      const first = expectStatus(await t.post('/api/environment-variables', { name, value: '1' }), 201);
      const body = expectError(await t.post('/api/environment-variables', { name, value: '2' }), 409);
      assert.match(body.message as string, /name/);
      const other = expectStatus(await t.post('/api/environment-variables', { name: unique('OTHER'), value: '3' }), 201);
      expectError(await t.put(`/api/environment-variables/${other.id}`, { name }), 409);
      // Neither the refused create nor the refused rename left a trace.
      const same = await listAll(t, 'environment-variables', { filter: { name: { eq: name } } });
      assert.deepEqual(same, [first]);
      assert.deepEqual(expectStatus(await t.get(`/api/environment-variables/${other.id}`), 200), other);
    });

    it('requires name and value on create', async () => {
      const body = expectError(await t.post('/api/environment-variables', {}), 400);
      assert.match(body.message as string, /name/);
      assert.match(body.message as string, /value/);
    });
  });

  describe('flows', () => {
    it('defaults enabled to false, definition to {} and description to null', async () => {
      const { secret, ...created } = expectStatus(await t.post('/api/flows', { name: 'Nightly' }), 201);
      assert.match(secret, /^whsec_/, 'the signing secret, answered on create only');
      assertNewItem(created, t.ownerId);
      assert.equal(created.enabled, false);
      assert.deepEqual(created.definition, {});
      assert.equal(created.description, null);
      assert.deepEqual(expectStatus(await t.get(`/api/flows/${created.id}`), 200), created);
    });

    it('keeps a definition as structured JSON, and enabled as a boolean', async () => {
      // A definition has a shape now (CONTRACT §9, flows): structured JSON in its filter and headers.
      const definition = {
        ...(await hook(t)),
        webhook: { url: 'https://x.test/hook', headers: { 'X-Text': 'quotes " and \\ and ünïcödé 🎉' } },
      };
      const created = expectStatus(await t.post('/api/flows', { name: 'Structured', enabled: true, definition }), 201);
      assert.equal(created.enabled, true);
      assert.deepEqual(created.definition, definition);
      const read = expectStatus(await t.get(`/api/flows/${created.id}`), 200);
      assert.deepEqual(read.definition, definition);
      assert.equal(read.enabled, true);
    });

    it('updates partially with PUT: 200, updatedAt moves, createdAt/createdBy and untouched fields stay', async () => {
      const created = expectStatus(
        await t.post('/api/flows', { name: 'Partial', description: 'old', enabled: true, definition: await hook(t) }),
        201,
      );
      await sleep(5);
      const updated = expectStatus(await t.put(`/api/flows/${created.id}`, { description: 'new' }), 200);
      assert.equal(updated.description, 'new');
      assert.equal(updated.name, 'Partial');
      assert.equal(updated.enabled, true);
      assert.deepEqual(updated.definition, created.definition);
      assert.equal(updated.id, created.id);
      assert.equal(updated.createdAt, created.createdAt);
      assert.equal(updated.createdBy, created.createdBy);
      assert.match(updated.updatedAt, ISO_UTC);
      assert.ok(updated.updatedAt > created.updatedAt, `updatedAt ${updated.updatedAt} moved past ${created.updatedAt}`);
      assert.deepEqual(expectStatus(await t.get(`/api/flows/${created.id}`), 200), updated);

      // Each field alone, and null to clear the nullable one.
      await sleep(5);
      const again = expectStatus(await t.put(`/api/flows/${created.id}`, { enabled: false, definition: {}, description: null }), 200);
      assert.deepEqual(
        { name: again.name, enabled: again.enabled, definition: again.definition, description: again.description },
        { name: 'Partial', enabled: false, definition: {}, description: null },
      );
      assert.ok(again.updatedAt > updated.updatedAt);
      assert.equal(again.createdAt, created.createdAt);
    });

    it('accepts an empty update and the item\'s own id in the body', async () => {
      const created = expectStatus(await t.post('/api/flows', { name: 'Empty update' }), 201);
      await sleep(5);
      const updated = expectStatus(await t.put(`/api/flows/${created.id}`, {}), 200);
      assert.equal(updated.name, 'Empty update');
      assert.ok(updated.updatedAt > created.updatedAt);
      expectStatus(await t.put(`/api/flows/${created.id}`, { id: created.id, name: 'Renamed' }), 200);
      assert.equal(expectStatus(await t.get(`/api/flows/${created.id}`), 200).name, 'Renamed');
    });

    it('records who updated: updatedBy moves to the writer, createdBy stays', async () => {
      const { member, key } = await memberWithKey();
      const created = expectStatus(await t.post('/api/flows', { name: 'Audit' }), 201);
      const updated = expectStatus(await t.put(`/api/flows/${created.id}`, { name: 'Audit 2' }, { key }), 200);
      assert.equal(updated.createdBy, t.ownerId);
      assert.equal(updated.updatedBy, member.id);
      const byMember = expectStatus(await t.post('/api/flows', { name: 'By member' }, { key }), 201);
      assertNewItem(byMember, member.id as string);
    });

    it('deletes: 200 with the deleted item, then get, put and delete answer 404', async () => {
      const created = expectStatus(await t.post('/api/flows', { name: 'Doomed', definition: await hook(t) }), 201);
      const read = expectStatus(await t.get(`/api/flows/${created.id}`), 200);
      const deleted = expectStatus(await t.delete(`/api/flows/${created.id}`), 200);
      assert.deepEqual(deleted, read);
      expectError(await t.get(`/api/flows/${created.id}`), 404);
      expectError(await t.put(`/api/flows/${created.id}`, { name: 'x' }), 404);
      expectError(await t.delete(`/api/flows/${created.id}`), 404);
      assert.equal((await listAll(t, 'flows', { filter: { id: { eq: created.id } } })).length, 0);
    });

    it('answers 404 naming the id for an item that never existed', async () => {
      for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', 'x'.repeat(90)]) {
        const body = expectError(await t.get(`/api/flows/${id}`), 404);
        assert.ok((body.message as string).includes(id), body.message as string);
      }
    });

    it('answers a long id with 404 in the one error format', async () => {
      const id = 'x'.repeat(300);
      expectError(await t.get(`/api/flows/${id}`), 404);
      expectError(await t.put(`/api/flows/${id}`, { name: 'x' }), 404);
      expectError(await t.delete(`/api/flows/${id}`), 404);
    });

    it(
      'answers an id past the router\'s length limit in the one error format (error is the status name)',
      async () => {
        const reply = await t.get(`/api/flows/${'x'.repeat(5000)}`);
        assert.ok(reply.status >= 400 && reply.status < 500, `a 4xx, got ${reply.status}`);
        expectError(reply, reply.status);
        assert.equal(reply.body.error, STATUS_CODES[reply.status]);
      },
    );

    it('answers a malformed percent-encoding in an id with a 4xx in the error format', async () => {
      const reply = await t.get('/api/flows/%E0%A4%A');
      assert.ok(reply.status === 400 || reply.status === 404, `400 or 404, got ${reply.status}`);
      expectError(reply, reply.status);
      assert.equal(reply.body.error, STATUS_CODES[reply.status]);
    });
  });

  describe('members', () => {
    it('creates with name and optional email (default null) and gets it', async () => {
      const created = expectStatus(await t.post('/api/members', { name: 'Ada', email: 'ada@example.test' }), 201);
      assertNewItem(created, t.ownerId);
      assert.equal(created.name, 'Ada');
      assert.equal(created.email, 'ada@example.test');
      assert.deepEqual(expectStatus(await t.get(`/api/members/${created.id}`), 200), created);
      const noEmail = expectStatus(await t.post('/api/members', { name: 'Nobody' }), 201);
      assert.equal(noEmail.email, null);
    });

    it('lists the owner member, the one the test key belongs to', async () => {
      const owner = expectStatus(await t.get(`/api/members/${t.ownerId}`), 200);
      assert.equal(owner.id, t.ownerId);
      assert.ok((await listAll(t, 'members')).some((m) => m.id === t.ownerId));
    });

    it('refuses a duplicate email with 409 (create and update), but many members may have none', async () => {
      const email = `${unique('dup')}@example.test`;
      const first = expectStatus(await t.post('/api/members', { name: 'First', email }), 201);
      const body = expectError(await t.post('/api/members', { name: 'Second', email }), 409);
      assert.match(body.message as string, /email/);
      const other = expectStatus(await t.post('/api/members', { name: 'Other', email: null }), 201);
      expectStatus(await t.post('/api/members', { name: 'Other 2', email: null }), 201);
      expectError(await t.put(`/api/members/${other.id}`, { email }), 409);
      assert.equal(expectStatus(await t.get(`/api/members/${other.id}`), 200).email, null);
      assert.deepEqual(await listAll(t, 'members', { filter: { email: { eq: email } } }), [first]);
    });

    it('refuses an email without @ with a 400 naming email', async () => {
      const body = expectError(await t.post('/api/members', { name: 'Bad', email: 'not-an-email' }), 400);
      assert.match(body.message as string, /email/);
    });

    it('refuses to delete the owner member (409), which stays', async () => {
      const owner = expectStatus(await t.get(`/api/members/${t.ownerId}`), 200);
      const body = expectError(await t.delete(`/api/members/${t.ownerId}`), 409);
      assert.match(body.message as string, /owner/);
      assert.deepEqual(expectStatus(await t.get(`/api/members/${t.ownerId}`), 200), owner);
    });

    it('refuses to delete a member who has API keys (409); once they are gone it deletes (200)', async () => {
      const { member, keyItem } = await memberWithKey();
      const revoked = expectStatus(await t.post('/api/api-keys', { name: 'second', memberId: member.id }), 201);
      expectStatus(await t.put(`/api/api-keys/${revoked.id}`, { revokedAt: new Date().toISOString() }), 200);
      expectError(await t.delete(`/api/members/${member.id}`), 409);
      expectStatus(await t.get(`/api/members/${member.id}`), 200);
      expectStatus(await t.delete(`/api/api-keys/${keyItem.id}`), 200);
      // A revoked key is still the member's key.
      expectError(await t.delete(`/api/members/${member.id}`), 409);
      expectStatus(await t.delete(`/api/api-keys/${revoked.id}`), 200);
      const deleted = expectStatus(await t.delete(`/api/members/${member.id}`), 200);
      assert.equal(deleted.id, member.id);
      expectError(await t.get(`/api/members/${member.id}`), 404);
    });
  });

  describe('api-keys', () => {
    it('answers the key once on create: rh_ + 40 base62 characters, never again on get or list', async () => {
      const created = expectStatus(await t.post('/api/api-keys', { name: 'CI' }), 201);
      assertNewItem(created, t.ownerId);
      assert.match(created.key, GENERATED_KEY);
      assert.equal(created.name, 'CI');
      assert.equal(created.memberId, t.ownerId, 'memberId defaults to the member making the request');
      assert.equal(typeof created.prefix, 'string');
      assert.ok((created.key as string).startsWith(created.prefix), 'prefix is the start of the key');
      assert.ok((created.prefix as string).length < 20, 'the prefix does not give the key away');
      assert.equal(created.expiresAt, null);
      assert.equal(created.revokedAt, null);
      assert.equal(created.lastUsedAt, null);
      assert.equal('keyHash' in created, false);

      const read = expectStatus(await t.get(`/api/api-keys/${created.id}`), 200);
      assert.equal('key' in read, false);
      assert.equal('keyHash' in read, false);
      const { key: _key, ...withoutKey } = created;
      assert.deepEqual(read, withoutKey);
      for (const item of await listAll(t, 'api-keys')) {
        assert.equal('key' in item, false);
        assert.equal('keyHash' in item, false);
        assert.ok(!JSON.stringify(item).includes(created.key), 'the key never appears in a list');
      }
      const other = expectStatus(await t.post('/api/api-keys', { name: 'CI 2' }), 201);
      assert.notEqual(other.key, created.key);
    });

    it('the new key works as X-API-Key and writes as its member; lastUsedAt is set', async () => {
      const { member, key, keyItem } = await memberWithKey();
      assert.match(key, GENERATED_KEY);
      assert.equal(keyItem.memberId, member.id);
      const flow = expectStatus(await t.post('/api/flows', { name: 'Via new key' }, { key }), 201);
      assert.equal(flow.createdBy, member.id);
      assert.equal(flow.updatedBy, member.id);
      expectStatus(await t.get('/api/flows', { key }), 200);
      const read = expectStatus(await t.get(`/api/api-keys/${keyItem.id}`), 200);
      assert.match(read.lastUsedAt, ISO_UTC);
    });

    it('refuses a key for a member that does not exist (400), storing nothing', async () => {
      const count = (await listAll(t, 'api-keys')).length;
      const body = expectError(await t.post('/api/api-keys', { name: 'orphan', memberId: '00000000-0000-4000-8000-000000000000' }), 400);
      assert.match(body.message as string, /memberId/);
      assert.equal((await listAll(t, 'api-keys')).length, count);
    });

    it('revoking (PUT revokedAt) makes the key 401 from the next request on; other keys still work', async () => {
      const { key, keyItem } = await memberWithKey();
      expectStatus(await t.get('/api/flows', { key }), 200);
      const revokedAt = new Date().toISOString();
      const updated = expectStatus(await t.put(`/api/api-keys/${keyItem.id}`, { revokedAt }), 200);
      assert.equal(updated.revokedAt, revokedAt);
      assert.equal('key' in updated, false);
      expectError(await t.get('/api/flows', { key }), 401);
      expectError(await t.post('/api/flows', { name: 'after revoke' }, { key }), 401);
      expectStatus(await t.get('/api/flows'), 200);
    });

    it('a key can revoke itself, and that request still completes', async () => {
      const { key, keyItem } = await memberWithKey();
      expectStatus(await t.put(`/api/api-keys/${keyItem.id}`, { revokedAt: new Date().toISOString() }, { key }), 200);
      expectError(await t.get('/api/flows', { key }), 401);
    });

    it('deleting a key makes it 401; the delete answers the key item without the key', async () => {
      const { key, keyItem } = await memberWithKey();
      expectStatus(await t.get('/api/members', { key }), 200);
      const deleted = expectStatus(await t.delete(`/api/api-keys/${keyItem.id}`), 200);
      assert.equal(deleted.id, keyItem.id);
      assert.equal('key' in deleted, false);
      assert.equal('keyHash' in deleted, false);
      expectError(await t.get('/api/members', { key }), 401);
      expectError(await t.get(`/api/api-keys/${keyItem.id}`), 404);
    });

    it('a key whose expiresAt is past is refused (401); one expiring later works', async () => {
      const past = expectStatus(await t.post('/api/api-keys', { name: 'old', expiresAt: '2000-01-01T00:00:00Z' }), 201);
      assert.equal(past.expiresAt, '2000-01-01T00:00:00.000Z');
      expectError(await t.get('/api/flows', { key: past.key }), 401);
      const future = expectStatus(await t.post('/api/api-keys', { name: 'new', expiresAt: '2999-01-01T09:00:00+09:00' }), 201);
      assert.equal(future.expiresAt, '2999-01-01T00:00:00.000Z', 'expiresAt is normalised to UTC');
      expectStatus(await t.get('/api/flows', { key: future.key }), 200);
      // Moving expiresAt into the past expires it from the next request on.
      expectStatus(await t.put(`/api/api-keys/${future.id}`, { expiresAt: new Date(Date.now() - 1000).toISOString() }), 200);
      expectError(await t.get('/api/flows', { key: future.key }), 401);
    });

    it('stores expiresAt as an instant: filters and sorting see it whatever offset it was written in', async () => {
      const name = unique('expiring');
      const made = expectStatus(
        await t.post('/api/api-keys/create-many', [
          { name, expiresAt: '2990-06-01T12:00:00+02:00' },
          { name, expiresAt: '2990-06-01T11:00:00Z' },
          { name, expiresAt: '2990-06-01T09:30:00-03:00' },
          { name },
        ]),
        201,
      );
      assert.deepEqual(
        made.data.map((k: Item) => k.expiresAt),
        ['2990-06-01T10:00:00.000Z', '2990-06-01T11:00:00.000Z', '2990-06-01T12:30:00.000Z', null],
      );
      const list = async (query: Record<string, unknown>) =>
        expectStatus(await t.get('/api/api-keys', { query: { ...query, filter: { and: [{ name: { eq: name } }, query.filter ?? {}] } } }), 200)
          .data.map((k: Item) => k.expiresAt);
      assert.deepEqual(await list({ filter: { expiresAt: { gt: '2990-06-01T13:00:00+02:00' } } }), ['2990-06-01T12:30:00.000Z']);
      assert.deepEqual(await list({ filter: { expiresAt: { eq: '2990-06-01T07:00:00-03:00' } } }), ['2990-06-01T10:00:00.000Z']);
      assert.deepEqual(await list({ filter: { expiresAt: { is: null } } }), [null]);
      assert.deepEqual(await list({ sorting: { expiresAt: 'desc' } }), [
        null, '2990-06-01T12:30:00.000Z', '2990-06-01T11:00:00.000Z', '2990-06-01T10:00:00.000Z',
      ]);
    });

    it('refuses writes of what only the service sets: memberId on update, prefix, lastUsedAt, key', async () => {
      const { member, keyItem } = await memberWithKey();
      const before = expectStatus(await t.get(`/api/api-keys/${keyItem.id}`), 200);
      const cases: Array<[string, Record<string, unknown>]> = [
        ['memberId', { memberId: t.ownerId }],
        ['prefix', { prefix: 'rh_xxxxx' }],
        ['lastUsedAt', { lastUsedAt: new Date().toISOString() }],
        ['key', { key: 'rh_0123456789012345678901234567890123456789' }],
        ['keyHash', { keyHash: 'abc' }],
      ];
      for (const [name, body] of cases) {
        const err = expectError(await t.put(`/api/api-keys/${keyItem.id}`, body), 400);
        assert.match(err.message as string, new RegExp(name), `update with ${name}`);
      }
      for (const [name, body] of cases.slice(1)) {
        const err = expectError(await t.post('/api/api-keys', { name: 'x', memberId: member.id, ...body }), 400);
        assert.match(err.message as string, new RegExp(name), `create with ${name}`);
      }
      const err = expectError(await t.post('/api/api-keys', { name: 'born revoked', revokedAt: new Date().toISOString() }), 400);
      assert.match(err.message as string, /revokedAt/);
      assert.deepEqual(expectStatus(await t.get(`/api/api-keys/${keyItem.id}`), 200), before);
    });

    it('refuses an expiresAt or revokedAt that is not an ISO date-time with offset', async () => {
      const { keyItem } = await memberWithKey();
      for (const expiresAt of ['tomorrow', '2030-01-01', '2030-01-01T00:00:00', '2030-02-30T00:00:00Z', 5]) {
        const err = expectError(await t.post('/api/api-keys', { name: 'x', expiresAt }), 400);
        assert.match(err.message as string, /expiresAt/);
      }
      const err = expectError(await t.put(`/api/api-keys/${keyItem.id}`, { revokedAt: 'now' }), 400);
      assert.match(err.message as string, /revokedAt/);
      assert.equal(expectStatus(await t.get(`/api/api-keys/${keyItem.id}`), 200).revokedAt, null);
    });
  });

  describe('tables and routes', () => {
    it('tables is a generic resource too (light check)', async () => {
      const created = expectStatus(await t.post('/api/tables', { name: 'T', code: unique('t') }), 201);
      assertNewItem(created, t.ownerId);
      const body = expectStatus(await t.get('/api/tables', { query: { relations: ['createdByMember'] } }), 200);
      const listed = (body.data as Item[]).find((i) => i.id === created.id) as Item;
      assert.equal((listed.createdByMember as Item).id, t.ownerId);
      assert.equal(body.pagination.offset, 0);
    });

    it('every resource route requires a key (401 in the error format)', async () => {
      const flow = expectStatus(await t.post('/api/flows', { name: 'guarded' }), 201);
      for (const [method, url] of [
        ['GET', '/api/flows'], ['GET', `/api/flows/${flow.id}`], ['POST', '/api/flows'], ['PUT', `/api/flows/${flow.id}`],
        ['DELETE', `/api/flows/${flow.id}`], ['POST', '/api/flows/create-many'], ['PUT', '/api/flows/update-many'],
        ['DELETE', '/api/flows/delete-many'], ['GET', '/api/members'], ['GET', '/api/api-keys'], ['GET', '/api/environment-variables'],
      ] as const) {
        expectError(await t.request(method, url, { key: null, body: method === 'GET' ? undefined : {} }), 401);
        expectError(await t.request(method, url, { key: 'rh_wrong0000000000000000000000000000000000', body: method === 'GET' ? undefined : {} }), 401);
      }
      expectStatus(await t.get(`/api/flows/${flow.id}`), 200);
    });

    it('an unknown resource is a 404 in the error format', async () => {
      expectError(await t.get('/api/widgets'), 404);
      expectError(await t.post('/api/widgets', { name: 'x' }), 404);
    });
  });
});
