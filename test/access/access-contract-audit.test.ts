import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { dataChecksum } from '../support/data-checksum.ts';
import { type TestApp, eachDatabase, expectError, startApp, withKey } from '../support/harness.ts';
import { makeKey } from './keys.ts';

/**
 * CONTRACT §12 as a demanding user checks it, for what the other access tests leave out: a batch's
 * `expand` needs rows:read on the tables it reaches, as every other expand does, and a write's
 * `expand` of a self-link needs rows:read on its own table (the other row it reads); members
 * embedded by `relations` need resources:read, as reading members does; a key created with an
 * Idempotency-Key is stored only as its hash (§2), its kept answer included.
 */

eachDatabase('access contract audit', (kind) => {
  let t: TestApp;
  let ordersId: string;
  let customersId: string;

  before(async () => {
    t = await startApp(kind);
    let r = await t.post('/api/tables', { code: 'customers', name: 'Customers', fields: [{ code: 'name', type: 'text' }] });
    assert.equal(r.status, 201, r.text);
    customersId = r.body.id;
    r = await t.post('/api/tables', { code: 'orders', name: 'Orders', fields: [{ code: 'title', type: 'text' }, { code: 'customer', type: 'link', options: { table: 'customers' } }] });
    assert.equal(r.status, 201, r.text);
    ordersId = r.body.id;
    assert.equal((await t.post('/api/tables/customers/rows', { id: 'c1', values: { name: 'secret name' } })).status, 201);
    assert.equal((await t.post('/api/tables/orders/rows', { id: 'o1', values: { title: 'one', customer: 'c1' } })).status, 201);
  });
  after(() => t.close());

  it('refuses a batch whose expand reaches a table the key may not read, naming it, and writes nothing', async () => {
    const key = await makeKey(t, ['rows:create', 'rows:update'], [ordersId]);
    const before = await dataChecksum(t);
    const update = { operations: [{ type: 'update', tableId: 'orders', id: 'o1', values: { title: 'changed' } }] };
    const refused = expectError(await t.post('/api/rows-batch?expand=customer', update, { key }), 403);
    assert.equal(refused.message, 'this key lacks rows:read on table customers');
    assert.doesNotMatch(JSON.stringify(refused), /secret name/);
    const create = { operations: [{ type: 'create', tableId: 'orders', values: { title: 'two', customer: 'c1' } }] };
    expectError(await t.post('/api/rows-batch?expand=customer', create, { key }), 403);
    assert.equal(await dataChecksum(t), before, 'a refused batch wrote');
    // Without expand the same batch is the key's to make; with rows:read on customers, expand too.
    assert.equal((await t.post('/api/rows-batch', update, { key })).status, 200);
    const reader = await makeKey(t, ['rows:update', 'rows:read'], [ordersId, customersId]);
    const expanded = await t.post('/api/rows-batch?expand=customer', update, { key: reader });
    assert.equal(expanded.status, 200, expanded.text);
    assert.equal(expanded.body.data[0].row.values.customer.values.name, 'secret name');
  });

  it('keeps the answer to a key created with an Idempotency-Key without the key itself: stored only as its hash, the replay answers the record', async () => {
    const stored = async () => JSON.stringify(await t.database.db.selectFrom('rh_idempotency').selectAll().execute());
    const made = await t.post('/api/api-keys', { name: 'retried' }, withKey('make-retried'));
    assert.equal(made.status, 201, made.text);
    const key = made.body.key as string;
    assert.match(key, /^rh_[A-Za-z0-9]{40}$/);
    const many = await t.post('/api/api-keys/create-many', [{ name: 'retried 2' }, { name: 'retried 3' }], withKey('make-many'));
    assert.equal(many.status, 201, many.text);
    const keys = [key, ...(many.body.data as { key: string }[]).map((k) => k.key)];
    const kept = await stored();
    for (const k of keys) assert.equal(kept.includes(k), false, 'a new key stored as it is in its kept answer');
    assert.match(kept, /retried 3/, 'the answers are kept');

    const again = await t.post('/api/api-keys', { name: 'retried' }, withKey('make-retried'));
    assert.equal(again.status, 201);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    const { key: _key, ...record } = made.body;
    assert.deepEqual(again.body, record);
    const manyAgain = await t.post('/api/api-keys/create-many', [{ name: 'retried 2' }, { name: 'retried 3' }], withKey('make-many'));
    assert.equal(manyAgain.headers['idempotent-replayed'], 'true');
    assert.deepEqual(manyAgain.body.data.map((k: { id: string; key?: string }) => [k.id, k.key]), many.body.data.map((k: { id: string }) => [k.id, undefined]));
    // One key made by each request, each working.
    assert.equal((await t.get('/api/api-keys')).body.data.filter((k: { name: string }) => k.name.startsWith('retried')).length, 3);
    for (const k of keys) assert.equal((await t.get('/api/api-keys/me', { key: k })).status, 200);
  });

  it('refuses a write expanding a self-link to a key that may not read its table (another row of it), and writes nothing', async () => {
    const made = await t.post('/api/tables', { code: 'tasks', name: 'Tasks', fields: [{ code: 'title', type: 'text' }, { code: 'parent', type: 'link', options: { table: 'tasks' } }] });
    assert.equal(made.status, 201, made.text);
    const tasksId = made.body.id as string;
    assert.equal((await t.post('/api/tables/tasks/rows', { id: 'hidden', values: { title: 'not yours to read' } })).status, 201);
    assert.equal((await t.post('/api/tables/tasks/rows', { id: 'mine', values: { title: 'mine' } })).status, 201);
    const writer = await makeKey(t, ['rows:create', 'rows:update'], [tasksId]);
    const before = await dataChecksum(t);
    const refusals = [
      await t.post('/api/tables/tasks/rows?expand=parent', { id: 'new', values: { title: 'x', parent: 'hidden' } }, { key: writer }),
      await t.patch('/api/tables/tasks/rows/mine?expand=parent', { values: { parent: 'hidden' } }, { key: writer }),
      await t.post('/api/tables/tasks/rows-bulk?expand=parent', { data: [{ id: 'new', values: { title: 'x', parent: 'hidden' } }] }, { key: writer }),
      await t.patch('/api/tables/tasks/rows-bulk?expand=parent', { data: [{ id: 'mine', values: { parent: 'hidden' } }] }, { key: writer }),
      await t.post('/api/rows-batch?expand=parent', { operations: [{ type: 'update', tableId: 'tasks', id: 'mine', values: { parent: 'hidden' } }] }, { key: writer }),
    ];
    for (const r of refusals) {
      assert.equal(expectError(r, 403).message, 'this key lacks rows:read on table tasks');
      assert.doesNotMatch(r.text, /not yours to read/);
    }
    assert.equal(await dataChecksum(t), before, 'a refused write wrote');
    // The same writes without expand are the key's; with rows:read, expand too; rows:export alone exports expanded.
    assert.equal((await t.patch('/api/tables/tasks/rows/mine', { values: { parent: 'hidden' } }, { key: writer })).status, 200);
    const reader = await makeKey(t, ['rows:update', 'rows:read'], [tasksId]);
    const expanded = await t.patch('/api/tables/tasks/rows/mine?expand=parent', { values: { title: 'mine again' } }, { key: reader });
    assert.equal(expanded.status, 200, expanded.text);
    assert.equal(expanded.body.values.parent.values.title, 'not yours to read');
    const exporter = await makeKey(t, ['rows:export'], [tasksId]);
    const exported = await t.get('/api/tables/tasks/rows-export', { key: exporter, query: { format: 'jsonl', encoding: 'utf8', newline: 'lf', expand: 'parent' } });
    assert.equal(exported.status, 200, exported.text);
    // A filter through the self-link is the export-only key's to use too: the rows linking to `hidden`.
    const filtered = await t.get('/api/tables/tasks/rows-export', { key: exporter, query: { format: 'jsonl', encoding: 'utf8', newline: 'lf', filter: { values: { parent: { _some: { id: { _eq: 'hidden' } } } } } } });
    assert.equal(filtered.status, 200, filtered.text);
    assert.deepEqual(filtered.text.trim().split('\n').map((line) => JSON.parse(line).id), ['mine']);
  });

  it('embeds members (relations) only for a key that may read members (resources:read), naming the scope', async () => {
    assert.equal((await t.post('/api/members', { name: 'Aki', email: 'aki@example.org' })).status, 201);
    const relations = { relations: ['createdByMember'] };
    const cases: [string, string[], Record<string, unknown>][] = [
      ['/api/tables', ['schema:read'], relations],
      [`/api/tables/${ordersId}`, ['schema:read'], relations],
      ['/api/api-keys', ['keys:manage'], { relations: ['member'] }],
      ['/api/flows', ['flows:read'], relations],
      ['/api/environment-variables', ['resources:read'], relations],
    ];
    for (const [url, scopes, query] of cases) {
      const key = await makeKey(t, scopes);
      const plain = await t.get(url, { key });
      assert.equal(plain.status, 200, `${url}: ${plain.text}`);
      const embedded = await t.get(url, { key, query });
      if (scopes.includes('resources:read')) {
        assert.equal(embedded.status, 200, `${url}: ${embedded.text}`);
        continue;
      }
      assert.equal(expectError(embedded, 403).message, 'this key lacks resources:read', url);
      assert.doesNotMatch(embedded.text, /aki@example\.org|"email"/);
      const both = await t.get(url, { key: await makeKey(t, [...scopes, 'resources:read']), query });
      assert.equal(both.status, 200, `${url}: ${both.text}`);
    }
  });

  it('GET /api/api-keys/me takes relations as a key by id does, and answers 400 naming any other parameter', async () => {
    const key = await makeKey(t, ['rows:read']);
    const own = await t.get('/api/api-keys/me', { key });
    assert.equal(own.status, 200, own.text);
    const unknown = expectError(await t.get('/api/api-keys/me', { key, query: { expand: 'member' } }), 400);
    assert.match(String(unknown.message), /expand/);
    expectError(await t.get('/api/api-keys/me', { key, query: { relations: ['nope'] } }), 400);
    assert.equal(expectError(await t.get('/api/api-keys/me', { key, query: { relations: ['member'] } }), 403).message, 'this key lacks resources:read');
    const reader = await makeKey(t, ['rows:read', 'resources:read']);
    const embedded = await t.get('/api/api-keys/me', { key: reader, query: { relations: ['member'] } });
    assert.equal(embedded.status, 200, embedded.text);
    assert.equal(embedded.body.member.id, embedded.body.memberId);
  });

  it('names each problem of a key\'s scopes, tables and rateLimit once, in the words of their own rules', async () => {
    const made = await t.post('/api/api-keys', { name: 'to change' });
    assert.equal(made.status, 201, made.text);
    const before = await dataChecksum(t);
    const cases: [Record<string, unknown>, string[]][] = [
      [{ rateLimit: { requests: -1, perSeconds: 0 } }, ['rateLimit.requests', 'rateLimit.perSeconds']],
      [{ rateLimit: '10/60' }, ['rateLimit']],
      [{ scopes: ['rows:read', 5] }, ['scopes[1]']],
      [{ tables: 'orders' }, ['tables']],
    ];
    for (const [body, paths] of cases) {
      for (const r of [await t.put(`/api/api-keys/${made.body.id}`, body), await t.post('/api/api-keys', { name: 'new', ...body })]) {
        const error = expectError(r, 400);
        const details = error.details as { path: string; message: string }[];
        assert.deepEqual(details.map((d) => d.path), paths, `${JSON.stringify(body)}: ${error.message}`);
        assert.doesNotMatch(String(error.message), /anyOf|: must be null(;|$)|: must be (object|string|array)(;|$)/, JSON.stringify(body));
      }
    }
    assert.equal(await dataChecksum(t), before);
  });
});
