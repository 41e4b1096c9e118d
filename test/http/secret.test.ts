import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { bootstrap } from '../../src/store/bootstrap.ts';
import { TEST_KEY, type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';

/**
 * ROWHOUSE_SECRET (CONTRACT §1): generated once and kept in the database when not given, so every
 * instance on that database signs and checks cursors alike; a given secret must be the same on
 * every instance.
 */
eachDatabase('signing secret', (kind) => {
  let t: TestApp;
  let cursorPath: string;

  /** Another instance on the same database, with the given secret (null: the database's). */
  async function instance(secret: string | null): Promise<FastifyInstance> {
    const boot = await bootstrap(t.database.db, { secret, apiKey: TEST_KEY });
    return buildApp({ config: t.config, database: t.database, secret: boot.secret, logger: false });
  }

  const follow = async (app: FastifyInstance) =>
    app.inject({ method: 'GET', url: cursorPath, headers: { 'x-api-key': TEST_KEY } });

  before(async () => {
    t = await startApp(kind);
    assert.equal((await t.post('/api/tables', { code: 'signed', name: 'Signed', fields: [{ code: 'n', type: 'number' }] })).status, 201);
    for (let i = 0; i < 3; i++) assert.equal((await t.post('/api/tables/signed/rows', { values: { n: i } })).status, 201);
    const first = await t.get('/api/tables/signed/rows', { query: { pageSize: '1' } });
    cursorPath = (first.body.nextUrl as string).replace(/^https?:\/\/[^/]+/, '');
  });
  after(() => t.close());

  it('a generated secret is kept in the database: another instance (or a restart) accepts the cursor', async () => {
    const other = await instance(null);
    try {
      const r = await follow(other);
      assert.equal(r.statusCode, 200, r.body);
      assert.equal(JSON.parse(r.body).data.length, 1);
    } finally {
      await other.close();
    }
  });

  it('instances given the same ROWHOUSE_SECRET accept each other\'s cursors; another secret refuses them', async () => {
    const a = await instance('the-same-secret-on-every-instance');
    const b = await instance('the-same-secret-on-every-instance');
    const c = await instance('some-other-secret-0123456789');
    try {
      const page = await a.inject({ method: 'GET', url: '/api/tables/signed/rows?pageSize=1', headers: { 'x-api-key': TEST_KEY } });
      const next = (JSON.parse(page.body).nextUrl as string).replace(/^https?:\/\/[^/]+/, '');
      assert.equal((await b.inject({ method: 'GET', url: next, headers: { 'x-api-key': TEST_KEY } })).statusCode, 200);
      const refused = await c.inject({ method: 'GET', url: next, headers: { 'x-api-key': TEST_KEY } });
      expectError({ status: refused.statusCode, headers: {}, body: JSON.parse(refused.body), text: refused.body }, 400);
    } finally {
      await Promise.all([a.close(), b.close(), c.close()]);
    }
  });
});
