import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { SCOPES, type Scope } from '../../src/domain/access.ts';
import { dataChecksum } from '../support/data-checksum.ts';
import { type Reply, type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';
import { type RegisteredRoute, registeredRoutes } from '../support/routes.ts';
import { makeKey } from './keys.ts';

/**
 * Scopes on every route (CONTRACT §12): each route the app registers under /api is listed below
 * with the scopes it needs and a request that succeeds; a key lacking one of them is refused with
 * a 403 naming it (and its table) and nothing changes, a key with just them succeeds. A route
 * registered without a declaration stops the app at start (http/access.ts); one missing here
 * fails the first test.
 */

const NO_SUCH_ID = '00000000-0000-4000-8000-000000000000';

interface Req {
  url: string;
  body?: unknown;
  raw?: string;
  headers?: Record<string, string>;
}

interface Case {
  /** Groups of scopes: the key needs one of each group. */
  needs: Scope[][];
  /** Row scopes (and schema:read of one table) apply to the key's tables: a key on another table is refused too. */
  table?: boolean;
  /** schema:write: the key must cover every table. */
  every?: boolean;
  /** The request, made fresh (a delete gets a row of its own). */
  make: (t: TestApp) => Promise<Req>;
  /** The status of success (the stage let it through to the route). */
  ok: number;
}

let serial = 0;
const fresh = (prefix: string) => `${prefix}${++serial}`;

async function made(t: TestApp, url: string, body: unknown): Promise<string> {
  const r = await t.post(url, body);
  assert.ok(r.status === 201 || r.status === 200, `${url}: ${r.status} ${r.text}`);
  return r.body.id as string;
}

const newRow = (t: TestApp) => made(t, '/api/tables/things/rows', { id: fresh('row'), values: { title: 'x' } });
const newTable = (t: TestApp) => made(t, '/api/tables', { code: fresh('t'), name: 'T', fields: [{ code: 'a', type: 'text' }] });

const CASES: Record<string, Case> = {
  'GET /api/tables/:table/rows': { needs: [['rows:read']], table: true, ok: 200, make: async () => ({ url: '/api/tables/things/rows' }) },
  'GET /api/tables/:table/rows/:rowId': { needs: [['rows:read']], table: true, ok: 200, make: async () => ({ url: '/api/tables/things/rows/r1' }) },
  'POST /api/tables/:table/rows': { needs: [['rows:create']], table: true, ok: 201, make: async () => ({ url: '/api/tables/things/rows', body: { values: { title: 'new' } } }) },
  'PATCH /api/tables/:table/rows/:rowId': { needs: [['rows:update']], table: true, ok: 200, make: async () => ({ url: '/api/tables/things/rows/r1', body: { values: { title: fresh('v') } } }) },
  'DELETE /api/tables/:table/rows/:rowId': { needs: [['rows:delete']], table: true, ok: 204, make: async (t) => ({ url: `/api/tables/things/rows/${await newRow(t)}` }) },
  'POST /api/tables/:table/rows-bulk': { needs: [['rows:create']], table: true, ok: 201, make: async () => ({ url: '/api/tables/things/rows-bulk', body: { data: [{ values: { title: 'b' } }] } }) },
  'PATCH /api/tables/:table/rows-bulk': { needs: [['rows:update']], table: true, ok: 200, make: async () => ({ url: '/api/tables/things/rows-bulk', body: { data: [{ id: 'r1', values: { title: fresh('v') } }] } }) },
  'DELETE /api/tables/:table/rows-bulk': { needs: [['rows:delete']], table: true, ok: 200, make: async (t) => ({ url: '/api/tables/things/rows-bulk', body: { ids: [await newRow(t)] } }) },
  'POST /api/rows-batch': {
    needs: [['rows:update']],
    table: true,
    ok: 200,
    make: async () => ({ url: '/api/rows-batch', body: { operations: [{ type: 'update', tableId: 'things', id: 'r1', values: { title: fresh('v') } }] } }),
  },
  'GET /api/tables/:table/rows-export': { needs: [['rows:export']], table: true, ok: 200, make: async () => ({ url: '/api/tables/things/rows-export?format=csv&encoding=utf8&newline=lf&header=true' }) },
  'POST /api/tables/:table/rows-import': {
    needs: [['rows:import'], ['rows:create']],
    table: true,
    ok: 200,
    make: async () => ({ url: '/api/tables/things/rows-import?format=csv&encoding=utf8', raw: 'title\nimported\n', headers: { 'content-type': 'text/csv' } }),
  },
  'POST /api/tables/:table/rows/:rowId/file-upload-url': {
    needs: [['rows:create', 'rows:update']],
    table: true,
    ok: 200,
    make: async () => ({ url: '/api/tables/things/rows/r1/file-upload-url', body: { count: 1 } }),
  },
  'GET /api/tables/:tableId/openapi': { needs: [['rows:read']], table: true, ok: 200, make: async (t) => ({ url: `/api/tables/${(await t.get('/api/tables/things')).body.id}/openapi` }) },
  'GET /api/tables/:table/changes': { needs: [['rows:read']], table: true, ok: 200, make: async () => ({ url: '/api/tables/things/changes' }) },
  'GET /api/tables/:table/rows-aggregate': { needs: [['rows:read']], table: true, ok: 200, make: async () => ({ url: '/api/tables/things/rows-aggregate?metrics=%5B%7B%22fn%22%3A%22count%22%7D%5D' }) },
  // A stream that opened would not end: a bad `after` shows the stage let it through to the route (400).
  'GET /api/tables/:table/changes/stream': { needs: [['rows:read']], table: true, ok: 400, make: async () => ({ url: '/api/tables/things/changes/stream?after=x' }) },
  'POST /api/tables/:table/changes/stream-url': { needs: [['rows:read']], table: true, ok: 200, make: async () => ({ url: '/api/tables/things/changes/stream-url', body: {} }) },
  'GET /api/tables/:table/rows/:rowId/history': { needs: [['rows:read']], table: true, ok: 200, make: async () => ({ url: '/api/tables/things/rows/r1/history' }) },

  'GET /api/tables': { needs: [['schema:read']], ok: 200, make: async () => ({ url: '/api/tables' }) },
  'GET /api/tables/:id': { needs: [['schema:read']], table: true, ok: 200, make: async () => ({ url: '/api/tables/things' }) },
  'POST /api/tables': { needs: [['schema:write']], every: true, ok: 201, make: async () => ({ url: '/api/tables', body: { code: fresh('t'), name: 'T' } }) },
  'PUT /api/tables/:id': { needs: [['schema:write']], every: true, ok: 200, make: async (t) => ({ url: `/api/tables/${await newTable(t)}`, body: { name: 'Renamed' } }) },
  'DELETE /api/tables/:id': { needs: [['schema:write']], every: true, ok: 200, make: async (t) => ({ url: `/api/tables/${await newTable(t)}` }) },
  'POST /api/tables/create-many': { needs: [['schema:write']], every: true, ok: 201, make: async () => ({ url: '/api/tables/create-many', body: [{ code: fresh('t'), name: 'T' }] }) },
  'PUT /api/tables/update-many': { needs: [['schema:write']], every: true, ok: 200, make: async (t) => ({ url: '/api/tables/update-many', body: [{ id: await newTable(t), name: 'R' }] }) },
  'DELETE /api/tables/delete-many': { needs: [['schema:write']], every: true, ok: 200, make: async (t) => ({ url: '/api/tables/delete-many', body: [await newTable(t)] }) },

  'GET /api/api-keys/me': { needs: [], ok: 200, make: async () => ({ url: '/api/api-keys/me' }) },
  'POST /api/flow-deliveries/:id/retry': { needs: [['flows:write']], ok: 404, make: async () => ({ url: `/api/flow-deliveries/${NO_SUCH_ID}/retry`, body: {} }) },
};

/** The generic resources' routes: what their reads and writes need, and an item's body. */
const RESOURCES: Record<string, { read: Scope; write?: Scope; body: () => Record<string, unknown>; change: Record<string, unknown> }> = {
  flows: { read: 'flows:read', write: 'flows:write', body: () => ({ name: fresh('f') }), change: { name: 'g' } },
  'flow-deliveries': { read: 'flows:read', body: () => ({}), change: {} },
  'environment-variables': { read: 'resources:read', write: 'resources:write', body: () => ({ name: fresh('V'), value: 'v' }), change: { value: 'w' } },
  members: { read: 'resources:read', write: 'resources:write', body: () => ({ name: fresh('m') }), change: { name: 'n' } },
  // A key can make only keys within its own scopes and tables (no escalation).
  'api-keys': { read: 'keys:manage', write: 'keys:manage', body: () => ({ name: fresh('k'), scopes: ['keys:manage'], tables: ['things'] }), change: { name: 'renamed' } },
};
for (const [name, { read, write, body, change }] of Object.entries(RESOURCES)) {
  const base = `/api/${name}`;
  const item = async (t: TestApp) => (name === 'flow-deliveries' ? NO_SUCH_ID : made(t, base, body()));
  CASES[`GET ${base}`] = { needs: [[read]], ok: 200, make: async () => ({ url: base }) };
  CASES[`GET ${base}/:id`] = { needs: [[read]], ok: name === 'flow-deliveries' ? 404 : 200, make: async (t) => ({ url: `${base}/${await item(t)}` }) };
  if (!write) continue;
  CASES[`POST ${base}`] = { needs: [[write]], ok: 201, make: async () => ({ url: base, body: body() }) };
  CASES[`PUT ${base}/:id`] = { needs: [[write]], ok: 200, make: async (t) => ({ url: `${base}/${await item(t)}`, body: change }) };
  CASES[`DELETE ${base}/:id`] = { needs: [[write]], ok: 200, make: async (t) => ({ url: `${base}/${await item(t)}` }) };
  CASES[`POST ${base}/create-many`] = { needs: [[write]], ok: 201, make: async () => ({ url: `${base}/create-many`, body: [body()] }) };
  CASES[`PUT ${base}/update-many`] = { needs: [[write]], ok: 200, make: async (t) => ({ url: `${base}/update-many`, body: [{ id: await item(t), ...change }] }) };
  CASES[`DELETE ${base}/delete-many`] = { needs: [[write]], ok: 200, make: async (t) => ({ url: `${base}/delete-many`, body: [await item(t)] }) };
}

const caseOf = (route: RegisteredRoute) => CASES[`${route.method === 'HEAD' ? 'GET' : route.method} ${route.url}`];

async function send(t: TestApp, method: string, req: Req, key: string): Promise<Reply> {
  return t.request(method as 'GET', req.url, { key, headers: req.headers, ...(req.raw !== undefined ? { raw: req.raw } : req.body !== undefined ? { body: req.body } : {}) });
}

eachDatabase('scopes on every route', (kind) => {
  let t: TestApp;
  let routes: RegisteredRoute[];
  let thingsId: string;
  let otherId: string;

  before(async () => {
    t = await startApp(kind);
    routes = registeredRoutes(t.app).filter((r) => r.url.startsWith('/api/'));
    thingsId = await made(t, '/api/tables', { code: 'things', name: 'Things', fields: [{ code: 'title', type: 'text' }] });
    otherId = await made(t, '/api/tables', { code: 'other', name: 'Other', fields: [{ code: 'title', type: 'text' }] });
    await made(t, '/api/tables/things/rows', { id: 'r1', values: { title: 'one' } });
  });
  after(() => t.close());

  it('knows every registered /api route, and every route it knows is registered', () => {
    const keys = new Set(routes.map((r) => `${r.method === 'HEAD' ? 'GET' : r.method} ${r.url}`));
    assert.deepEqual([...keys].filter((k) => !CASES[k]), [], 'routes without a case here: add one (its scopes and a request that succeeds)');
    assert.deepEqual(Object.keys(CASES).filter((k) => !keys.has(k)), [], 'cases of routes that are gone');
  });

  it('refuses a key lacking the scope, or the table, with a 403 naming it, and changes nothing', async () => {
    const wrong: string[] = [];
    for (const route of routes) {
      const c = caseOf(route);
      if (!c || c.needs.length === 0) continue;
      const label = `${route.method} ${route.url}`;
      // Keys that lack one group of scopes each, with every other scope on every table.
      const refusals: { key: string; lacks: RegExp }[] = [];
      for (const group of c.needs) {
        const others = SCOPES.filter((s) => s !== '*' && !group.includes(s));
        refusals.push({ key: await makeKey(t, others), lacks: new RegExp(`^(operations\\[0\\]: )?this key lacks ${group.join(' or ')}( on (table things|every table))?$`) });
      }
      const all = c.needs.map((g) => g[0]);
      if (c.table) refusals.push({ key: await makeKey(t, all, [otherId]), lacks: /^(operations\[0\]: )?this key lacks (rows:[a-z]+( or rows:[a-z]+)?|schema:read) on table things$/ });
      if (c.every) refusals.push({ key: await makeKey(t, all, [thingsId]), lacks: /^this key lacks schema:write on every table$/ });
      for (const { key, lacks } of refusals) {
        const req = await c.make(t);
        const sum = await dataChecksum(t);
        const r = await send(t, route.method, req, key);
        if (r.status !== 403) {
          wrong.push(`${label}: ${r.status} ${r.text.slice(0, 160)}`);
          continue;
        }
        if (route.method !== 'HEAD') {
          const body = expectError(r, 403);
          assert.equal(body.error, 'Forbidden');
          assert.match(String(body.message), lacks, label);
        }
        assert.equal(await dataChecksum(t), sum, `${label}: a refused request changed data`);
      }
    }
    assert.deepEqual(wrong, []);
  });

  it('accepts a key with just the scopes the route needs, on just the table', async () => {
    const wrong: string[] = [];
    for (const route of routes) {
      const c = caseOf(route);
      if (!c) continue;
      const scopes = c.needs.length === 0 ? ['rows:read'] : c.needs.map((g) => g[0]);
      const key = await makeKey(t, scopes, c.every ? ['*'] : [thingsId]);
      const r = await send(t, route.method, await c.make(t), key);
      if (r.status !== c.ok) wrong.push(`${route.method} ${route.url}: ${r.status} (expected ${c.ok}) ${r.text.slice(0, 160)}`);
    }
    assert.deepEqual(wrong, []);
  });
});

eachDatabase('a route without an access declaration', (kind) => {
  it('cannot be registered under /api: the app fails at start, naming it', async () => {
    const t = await startApp(kind);
    try {
      const { default: Fastify } = await import('fastify');
      const { installAccess } = await import('../../src/http/access.ts');
      const { TableCatalog } = await import('../../src/store/table-catalog.ts');
      const app = Fastify();
      installAccess(app, new TableCatalog(t.database), t.database.db);
      assert.throws(() => app.get('/api/forgotten', async () => ({})), /GET \/api\/forgotten declares no access/);
      app.get('/api/declared', { config: { access: () => [] } }, async () => ({}));
      await app.close();
    } finally {
      await t.close();
    }
  });
});
