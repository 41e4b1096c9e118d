import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { dataChecksum } from '../support/data-checksum.ts';
import { TEST_KEY, type TestApp, allRows, eachDatabase, expectError, startApp } from '../support/harness.ts';
import { childEnv } from '../support/served.ts';
import { makeKey } from './keys.ts';

/** What scoped keys do beyond each route's scope (CONTRACT §12): tables, batches, escalation, /me, the CLI, bad input. */

const BIN = fileURLToPath(new URL('../../bin/rowhouse.mjs', import.meta.url));

function cli(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

eachDatabase('scoped keys', (kind) => {
  let t: TestApp;
  let ordersId: string;
  let customersId: string;

  before(async () => {
    t = await startApp(kind);
    for (const code of ['orders', 'customers']) {
      const r = await t.post('/api/tables', { code, name: code, fields: [{ code: 'title', type: 'text' }] });
      assert.equal(r.status, 201, r.text);
      if (code === 'orders') ordersId = r.body.id;
      else customersId = r.body.id;
    }
    assert.equal((await t.post('/api/tables/orders/rows', { id: 'o1', values: { title: 'one' } })).status, 201);
    assert.equal((await t.post('/api/tables/customers/rows', { id: 'c1', values: { title: 'one' } })).status, 201);
  });
  after(() => t.close());

  it('gives a key made without scopes or tables everything, stores tables as ids and answers them on /me', async () => {
    const me = await t.get('/api/api-keys/me');
    assert.equal(me.status, 200, me.text);
    assert.deepEqual([me.body.scopes, me.body.tables, me.body.rateLimit], [['*'], ['*'], null]);
    const made = await t.post('/api/api-keys', { name: 'reporting', scopes: ['rows:read', 'rows:export'], tables: ['orders', customersId] });
    assert.equal(made.status, 201, made.text);
    assert.deepEqual(made.body.tables, [ordersId, customersId]);
    const own = await t.get('/api/api-keys/me', { key: made.body.key });
    assert.equal(own.status, 200, own.text);
    assert.equal(own.body.id, made.body.id);
    assert.deepEqual(own.body.scopes, ['rows:read', 'rows:export']);
    assert.equal(own.body.key, undefined);
    assert.equal(own.body.keyHash, undefined);
    // Its own record by id is the api-keys resource: keys:manage.
    expectError(await t.get(`/api/api-keys/${made.body.id}`, { key: made.body.key }), 403);
  });

  it('keeps every key made before scopes existed at full access (the columns default to ["*"])', async () => {
    const { db } = t.database;
    const now = new Date().toISOString();
    const key = 'rh_oldkey_0123456789abcdefghijklmnopqrstuv';
    const { hashApiKey } = await import('../../src/domain/api-key.ts');
    await db
      .insertInto('rh_api_keys')
      .values({ id: '11111111-1111-4111-8111-111111111111', name: 'old', memberId: t.ownerId, prefix: key.slice(0, 8), keyHash: hashApiKey(key), expiresAt: null, lastUsedAt: null, revokedAt: null, createdAt: now, updatedAt: now, createdBy: t.ownerId, updatedBy: t.ownerId } as never)
      .execute();
    const me = await t.get('/api/api-keys/me', { key });
    assert.deepEqual([me.body.scopes, me.body.tables], [['*'], ['*']]);
    assert.equal((await t.post('/api/tables', { code: 'byOldKey', name: 'x' }, { key })).status, 201);
    assert.equal((await t.delete('/api/tables/byOldKey', undefined, { key })).status, 200);
  });

  it('limits row scopes to the key’s tables, and lists only those tables', async () => {
    const key = await makeKey(t, ['rows:read', 'schema:read'], [ordersId]);
    assert.equal((await t.get('/api/tables/orders/rows', { key })).status, 200);
    assert.equal((await t.get(`/api/tables/${ordersId}/rows/o1`, { key })).status, 200);
    const refused = expectError(await t.get('/api/tables/customers/rows', { key }), 403);
    assert.equal(refused.message, 'this key lacks rows:read on table customers');
    const listed = await t.get('/api/tables', { key });
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.body.data.map((x: { code: string }) => x.code), ['orders']);
    expectError(await t.get('/api/tables/customers', { key }), 403);
    // A table that does not exist: 403 for a key limited to some tables (it says nothing of which exist), 404 for one on every table.
    assert.equal((await t.get('/api/tables/nothing/rows', { key })).status, 403);
    assert.equal((await t.get('/api/tables/nothing/rows', { key: await makeKey(t, ['rows:read']) })).status, 404);
  });

  it('refuses a batch with one operation outside the key’s scopes or tables, naming it, and writes nothing', async () => {
    const key = await makeKey(t, ['rows:create', 'rows:update'], [ordersId]);
    const createOnly = await makeKey(t, ['rows:create'], [ordersId]);
    const before = await dataChecksum(t);
    const ops = (last: Record<string, unknown>) => ({
      operations: [{ type: 'create', tableId: 'orders', values: { title: 'a' } }, { type: 'update', tableId: 'orders', id: 'o1', values: { title: 'b' } }, last],
    });
    const other = expectError(await t.post('/api/rows-batch', ops({ type: 'create', tableId: 'customers', values: { title: 'c' } }), { key }), 403);
    assert.equal(other.message, 'operations[2]: this key lacks rows:create on table customers');
    assert.equal(other.index, 2);
    const kindLacking = expectError(await t.post('/api/rows-batch', ops({ type: 'delete', tableId: 'orders', id: 'o1' }), { key }), 403);
    assert.equal(kindLacking.message, 'operations[2]: this key lacks rows:delete on table orders');
    const upsert = expectError(await t.post('/api/rows-batch', { operations: [{ type: 'create', tableId: 'orders', id: 'o1', values: { title: 'u' }, options: { upsert: true } }] }, { key: createOnly }), 403);
    assert.equal(upsert.message, 'operations[0]: this key lacks rows:update on table orders');
    assert.equal(await dataChecksum(t), before);
    const ok = await t.post('/api/rows-batch', ops({ type: 'create', tableId: 'orders', values: { title: 'c' } }), { key });
    assert.equal(ok.status, 200, ok.text);
  });

  it('needs rows:update for an upsert create, and for an import in upsert mode', async () => {
    const key = await makeKey(t, ['rows:create', 'rows:import'], [ordersId]);
    const single = expectError(await t.post('/api/tables/orders/rows', { id: 'o1', values: { title: 'x' }, options: { upsert: true } }, { key }), 403);
    assert.equal(single.message, 'this key lacks rows:update on table orders');
    expectError(await t.post('/api/tables/orders/rows-bulk', { data: [{ id: 'o1', values: { title: 'x' } }], options: { upsert: true } }, { key }), 403);
    const csv = { raw: 'id,title\no1,imported\n', headers: { 'content-type': 'text/csv' }, key };
    const upsertImport = expectError(await t.request('POST', '/api/tables/orders/rows-import?format=csv&encoding=utf8&mode=upsert', csv), 403);
    assert.equal(upsertImport.message, 'this key lacks rows:update on table orders');
    const created = await t.request('POST', '/api/tables/orders/rows-import?format=csv&encoding=utf8', { ...csv, raw: 'id,title\nimp1,imported\n' });
    assert.equal(created.status, 200, created.text);
    // rows:export alone allows an export; rows:read does not.
    const exportUrl = '/api/tables/orders/rows-export?format=csv&encoding=utf8&newline=lf&header=true';
    assert.equal((await t.get(exportUrl, { key: await makeKey(t, ['rows:export'], [ordersId]) })).status, 200);
    assert.equal((await t.get(exportUrl, { key: await makeKey(t, ['rows:read'], [ordersId]) })).status, 403);
  });

  it('refuses escalation: a key makes or changes only keys within its own scopes and tables', async () => {
    const manager = await makeKey(t, ['keys:manage', 'rows:read'], [ordersId]);
    const cases: [unknown, string][] = [
      [{ name: 'all' }, 'this key lacks *: a key can give another key only scopes it has itself'],
      [{ name: 'w', scopes: ['rows:create'], tables: ['orders'] }, 'this key lacks rows:create: a key can give another key only scopes it has itself'],
      [{ name: 't', scopes: ['rows:read'], tables: ['customers'] }, 'this key lacks table customers: a key can give another key only tables it has itself'],
      [{ name: 'a', scopes: ['rows:read'] }, 'this key lacks access to every table: a key can give another key only tables it has itself'],
    ];
    const before = await dataChecksum(t);
    for (const [body, message] of cases) assert.equal(expectError(await t.post('/api/api-keys', body, { key: manager }), 403).message, message);
    assert.equal((await t.post('/api/api-keys/create-many', [{ name: 'ok', scopes: ['rows:read'], tables: ['orders'] }, { name: 'all' }], { key: manager })).status, 403);
    // The full key cannot be changed, revoked or deleted by it either.
    const full = (await t.get('/api/api-keys/me')).body.id;
    expectError(await t.put(`/api/api-keys/${full}`, { revokedAt: new Date().toISOString() }, { key: manager }), 403);
    expectError(await t.delete(`/api/api-keys/${full}`, undefined, { key: manager }), 403);
    assert.equal(await dataChecksum(t), before);
    const made = await t.post('/api/api-keys', { name: 'reader', scopes: ['rows:read'], tables: [ordersId] }, { key: manager });
    assert.equal(made.status, 201, made.text);
    expectError(await t.put(`/api/api-keys/${made.body.id}`, { scopes: ['rows:read', 'rows:delete'] }, { key: manager }), 403);
    expectError(await t.put(`/api/api-keys/${made.body.id}`, { tables: ['*'] }, { key: manager }), 403);
    assert.equal((await t.put(`/api/api-keys/${made.body.id}`, { name: 'renamed', scopes: ['keys:manage'] }, { key: manager })).status, 200);
    assert.equal((await t.delete(`/api/api-keys/${made.body.id}`, undefined, { key: manager })).status, 200);
  });

  it('limits a flow to the key’s tables through its trigger table', async () => {
    const key = await makeKey(t, ['flows:write', 'flows:read'], [ordersId]);
    const definition = (table: string) => ({ trigger: { table, events: ['create'] }, webhook: { url: 'https://example.com/hook' } });
    const refused = expectError(await t.post('/api/flows', { name: 'f', definition: definition('customers') }, { key }), 403);
    assert.equal(refused.message, 'this key lacks flows:write on table customers');
    const made = await t.post('/api/flows', { name: 'f', definition: definition('orders') }, { key });
    assert.equal(made.status, 201, made.text);
    expectError(await t.put(`/api/flows/${made.body.id}`, { definition: definition('customers') }, { key }), 403);
    const elsewhere = await t.post('/api/flows', { name: 'g', definition: definition('customers') });
    expectError(await t.delete(`/api/flows/${elsewhere.body.id}`, undefined, { key }), 403);
    assert.equal((await t.delete(`/api/flows/${made.body.id}`, undefined, { key })).status, 200);
  });

  it('lists in a table’s OpenAPI document only the operations the key may use', async () => {
    const ops = async (key: string) => {
      const r = await t.get(`/api/tables/${ordersId}/openapi`, { key });
      assert.equal(r.status, 200, r.text);
      return Object.values(r.body.paths as Record<string, Record<string, { operationId: string }>>).flatMap((p) => Object.values(p).flatMap((o) => (o.operationId ? [o.operationId] : []))).sort();
    };
    const reads = ['aggregateRows', 'changeStreamUrl', 'getRow', 'listChanges', 'listRows', 'rowHistory', 'streamChanges'];
    assert.deepEqual(await ops(await makeKey(t, ['rows:read'], [ordersId])), reads);
    assert.deepEqual(await ops(await makeKey(t, ['rows:read', 'rows:import', 'rows:create'], [ordersId])), [...reads, 'batch', 'createRow', 'createRows', 'fileUploadUrls', 'importRows'].sort());
    const full = await ops(TEST_KEY);
    assert.ok(full.includes('deleteRow') && full.includes('exportRows'));
    const { OPERATION_SCOPES } = await import('../../src/openapi/table-operations.ts');
    assert.deepEqual(full.filter((id) => !OPERATION_SCOPES[id]), [], 'operations of the document without scopes in openapi/table-operations.ts');
  });

  it('answers 400 naming an unknown scope, an unknown table or an invalid rateLimit', async () => {
    const before = await dataChecksum(t);
    const bad = async (body: Record<string, unknown>, path: string) => {
      const r = expectError(await t.post('/api/api-keys', { name: 'bad', ...body }), 400);
      assert.ok((r.details as { path: string }[]).some((d) => d.path === path), `${JSON.stringify(body)}: ${JSON.stringify(r)}`);
    };
    await bad({ scopes: ['rows:read', 'rows:wipe'] }, 'scopes[1]');
    await bad({ scopes: [] }, 'scopes');
    await bad({ scopes: 'rows:read' }, 'scopes');
    await bad({ tables: ['nosuch'] }, 'tables[0]');
    await bad({ tables: ['*', 'orders'] }, 'tables');
    await bad({ rateLimit: { requests: 0, perSeconds: 60 } }, 'rateLimit.requests');
    await bad({ rateLimit: { requests: 10, perSeconds: 1.5 } }, 'rateLimit.perSeconds');
    await bad({ rateLimit: { requests: 10 } }, 'rateLimit.perSeconds');
    assert.equal(await dataChecksum(t), before);
  });

  it('creates scoped keys from the command line', async () => {
    const env = { DATABASE_URL: t.scratch.url, ROWHOUSE_DATA_DIR: t.scratch.dir };
    const made = await cli(['api-keys', 'create', '--name', 'reporting', '--scope', 'rows:read', '--scope', 'rows:export', '--table', 'orders'], env);
    assert.equal(made.code, 0, made.stderr);
    const key = /^(rh_[0-9A-Za-z]{40})$/m.exec(made.stdout)?.[1] as string;
    assert.ok(key, made.stdout);
    const me = await t.get('/api/api-keys/me', { key });
    assert.deepEqual([me.body.scopes, me.body.tables], [['rows:read', 'rows:export'], [ordersId]]);
    assert.equal((await allRows(t, 'orders')).length > 0, true);
    assert.equal((await t.get('/api/tables/orders/rows', { key })).status, 200);
    assert.equal((await t.get('/api/tables/customers/rows', { key })).status, 403);
    const wrong = await cli(['api-keys', 'create', '--name', 'x', '--scope', 'rows:wipe', '--table', 'nosuch'], env);
    assert.equal(wrong.code, 2);
    assert.match(wrong.stderr, /--scope\[0\]: unknown scope "rows:wipe"/);
    const noTable = await cli(['api-keys', 'create', '--name', 'x', '--table', 'nosuch'], env);
    assert.equal(noTable.code, 2);
    assert.match(noTable.stderr, /--table\[0\]: no table nosuch/);
  });
});
