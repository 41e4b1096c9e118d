import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { generateApiKey, hashApiKey } from '../../src/domain/api-key.ts';
import { dataChecksum, databaseTables } from '../support/data-checksum.ts';
import { TEST_KEY, type Reply, type ScratchDatabase, type TestApp, eachDatabase, expectError, scratchDatabase, startApp } from '../support/harness.ts';
import { type RegisteredRoute, registeredRoutes } from '../support/routes.ts';
import { freePort } from '../support/wire.ts';

/**
 * Access (issue 17, "Reliability and security"): every route the app registers
 * (test/support/routes.ts) is either under /api, where a missing, unknown, revoked or expired
 * X-API-Key answers 401 in the error format (CONTRACT §2-3) and changes nothing, or listed below as
 * public with its reason; a route that is neither fails the test. Keys are looked up by their hash.
 * API keys and the signatures of signed URLs never reach the server's log.
 */

/** The routes outside /api, and why each is served without a key. */
const PUBLIC: Record<string, string> = {
  'GET /healthz': 'liveness probe for load balancers and orchestrators, which hold no key (CONTRACT §1); says nothing about data',
  'GET /readyz': 'readiness probe, as /healthz, and also pings the database',
  'GET /openapi.json': "the service's own OpenAPI document (CONTRACT §10): the API's shape, no data",
  'GET /docs': 'the browsable reference page of that document',
  'GET /docs/': 'redirects to /docs',
  'GET /docs/start.js': "the reference page's script",
  'GET /docs/swagger-ui.css': "the reference page's files, from the swagger-ui-dist package",
  'GET /docs/swagger-ui-bundle.js': "the reference page's files, from the swagger-ui-dist package",
  'GET /docs/favicon-32x32.png': "the reference page's files, from the swagger-ui-dist package",
  'GET /console': 'the browser console (CONTRACT §15): a page that asks for a key and then calls /api with it; no data',
  'GET /console/': 'redirects to /console',
  'GET /console/assets/:file': "the console's built scripts and styles",
  'PUT /files/:tableId/:rowId/:fileId': 'signed upload URL (CONTRACT §8): its HMAC signature and expiry are the credential; altered or expired answers 403',
  'GET /files/:tableId/:rowId/:fileId': 'signed download URL (CONTRACT §8): its HMAC signature and expiry are the credential; altered or expired answers 403',
  'GET /streams/tables/:tableId/changes': 'signed change stream URL (issue 31, for EventSource, which cannot send a key): its HMAC signature and expiry are the credential, and the key it was issued for must still be valid; else 403',
};
/** HEAD answers what GET answers (Fastify adds one for each GET route). */
const publicReason = (route: string) => PUBLIC[route.replace(/^HEAD /, 'GET ')];

const isApi = (url: string) => url === '/api' || url.startsWith('/api/');
const NO_SUCH_ID = '00000000-0000-4000-8000-000000000000';

eachDatabase('access: keys on every /api route', (kind) => {
  let t: TestApp;
  let routes: RegisteredRoute[];
  let tableId: string;
  const ids: Record<string, string> = {};
  const keys: Record<'missing' | 'unknown' | 'revoked' | 'expired', string | null> = { missing: null, unknown: generateApiKey(), revoked: '', expired: '' };

  before(async () => {
    t = await startApp(kind);
    routes = registeredRoutes(t.app);
    const table = await t.post('/api/tables', { code: 'things', name: 'Things', fields: [{ code: 'title', type: 'text' }] });
    assert.equal(table.status, 201, table.text);
    tableId = table.body.id;
    assert.equal((await t.post('/api/tables/things/rows', { id: 'r1', values: { title: 'one' } })).status, 201);
    for (const [resource, body] of [['environment-variables', { name: 'V', value: 'v' }], ['flows', { name: 'f' }], ['members', { name: 'm' }], ['api-keys', { name: 'k' }]] as const) {
      const made = await t.post(`/api/${resource}`, body);
      assert.equal(made.status, 201, made.text);
      ids[resource] = made.body.id;
    }
    ids.tables = tableId;
    ids['flow-deliveries'] = NO_SUCH_ID;

    // A revoked key and an expired one: each worked before.
    for (const which of ['revoked', 'expired'] as const) {
      const made = await t.post('/api/api-keys', { name: which });
      assert.equal(made.status, 201, made.text);
      assert.equal((await t.get('/api/flows', { key: made.body.key })).status, 200);
      const past = new Date(Date.now() - 1000).toISOString();
      const changed = await t.put(`/api/api-keys/${made.body.id}`, which === 'revoked' ? { revokedAt: past } : { expiresAt: past });
      assert.equal(changed.status, 200, changed.text);
      keys[which] = made.body.key;
    }
  });
  after(() => t.close());

  it('serves every route under /api or lists it as public with a reason', () => {
    const outside = routes.filter((r) => !isApi(r.url)).map((r) => `${r.method} ${r.url}`);
    const unlisted = outside.filter((r) => publicReason(r) === undefined);
    assert.deepEqual(unlisted, [], 'routes outside /api that are not listed as public: put them under /api, or list them with the reason they need no key');
    // The list holds no route that is gone.
    assert.deepEqual(Object.keys(PUBLIC).filter((r) => !outside.includes(r)), []);
    assert.ok(routes.filter((r) => isApi(r.url)).length > 60, 'the /api routes were seen');
  });

  /** A request that would reach the route: its parameters filled, a body where it takes one. */
  function requestFor(route: RegisteredRoute, fill: (param: string) => string): { url: string; raw?: string; headers: Record<string, string> } {
    const url = route.url.replace(/:([A-Za-z]+)/g, (_, p: string) => encodeURIComponent(fill(p)));
    if (route.method === 'GET' || route.method === 'HEAD') return { url, headers: {} };
    if (route.url.endsWith('/rows-import')) return { url: `${url}?format=csv&encoding=utf8`, raw: 'title\nimported\n', headers: { 'content-type': 'text/csv' } };
    const body = route.url.endsWith('-many') ? [] : route.url.endsWith('/rows-bulk') ? { data: [] } : route.url === '/api/rows-batch' ? { operations: [] } : { name: 'x' };
    return { url, raw: JSON.stringify(body), headers: { 'content-type': 'application/json' } };
  }

  const validParam = (route: RegisteredRoute) => (param: string) =>
    param === 'table' || param === 'tableId' ? tableId : param === 'rowId' ? 'r1' : param === 'id' ? ids[route.url.split('/')[2]] : 'x';

  it('answers 401 in the error format, and changes nothing, for a missing, unknown, revoked or expired key on every /api route', async () => {
    const before = await dataChecksum(t);
    const api = routes.filter((r) => isApi(r.url));
    const wrong: string[] = [];
    for (const route of api) {
      for (const [which, key] of Object.entries(keys)) {
        const { url, raw, headers } = requestFor(route, validParam(route));
        const r: Reply = await t.request(route.method as 'GET', url, { raw, headers, key });
        const label = `${route.method} ${route.url} with a ${which} key`;
        if (r.status !== 401) {
          wrong.push(`${label}: ${r.status} ${r.text.slice(0, 120)}`);
          continue;
        }
        assert.match(String(r.headers['content-type']), /^application\/json/, label);
        if (route.method === 'HEAD') continue;
        const body = expectError(r, 401);
        assert.deepEqual(Object.keys(body).sort(), ['error', 'message', 'statusCode'], label);
        assert.equal(body.error, 'Unauthorized');
        assert.equal(body.message, which === 'missing' ? 'X-API-Key header is required' : 'X-API-Key is not a valid API key (unknown, revoked or expired)', label);
      }
    }
    assert.deepEqual(wrong, []);
    assert.equal(await dataChecksum(t), before, 'a refused request changed data');
  });

  it('lets the valid key through on every /api route (what the 401s above turn on is the key alone)', async () => {
    const wrong: string[] = [];
    for (const route of routes.filter((r) => isApi(r.url))) {
      // Ids that name nothing: the requests reach their routes and change nothing.
      const { url, raw, headers } = requestFor(route, (p) => (p === 'table' || p === 'tableId' ? NO_SUCH_ID : p === 'rowId' ? 'no-such-row' : NO_SUCH_ID));
      const r = await t.request(route.method as 'GET', url, { raw, headers });
      const routeMissed = r.status === 404 && /^Route /.test(String(r.body?.message));
      if (r.status === 401 || routeMissed || r.status >= 500) wrong.push(`${route.method} ${route.url}: ${r.status} ${r.text.slice(0, 120)}`);
    }
    assert.deepEqual(wrong, []);
  });

  it('answers 401 for a valid key sent twice: HTTP joins the values into one, which is no key', async () => {
    const r = expectError(await t.get('/api/flows', { key: `${TEST_KEY}, ${TEST_KEY}` }), 401);
    assert.equal(r.message, 'X-API-Key is not a valid API key (unknown, revoked or expired)');
  });

  it('answers 401 for paths under /api that match no route, and for the prefix spelt with percent-encoding', async () => {
    for (const [which, key] of Object.entries(keys)) {
      for (const url of ['/api', '/api/', '/api/nope', '/%61pi/flows', '/api/tables/things/rows/r1/nope']) {
        assert.equal((await t.get(url, { key })).status, 401, `${url} with a ${which} key`);
      }
    }
  });

  it('serves the public routes without a key, and the signed URLs only with a valid signature', async () => {
    for (const url of ['/healthz', '/readyz', '/openapi.json', '/docs', '/docs/start.js']) assert.equal((await t.get(url, { key: null })).status, 200, url);
    const issued = await t.post('/api/tables/things/rows/r1/file-upload-url', { count: 1 });
    const upload = new URL(issued.body.data[0].url);
    const forged = `${upload.pathname}?${upload.searchParams.toString().replace(/signature=[^&]+/, 'signature=AAAA')}`;
    expectError(await t.request('PUT', forged, { raw: 'x', headers: { 'content-type': 'text/plain' }, key: null }), 403);
    expectError(await t.request('PUT', upload.pathname, { raw: 'x', headers: { 'content-type': 'text/plain' }, key: null }), 403);
    // A valid API key is no signature.
    expectError(await t.request('PUT', upload.pathname, { raw: 'x', headers: { 'content-type': 'text/plain' } }), 403);
    expectError(await t.request('GET', `/files/${tableId}/r1/${issued.body.data[0].id}?expires=99999999999&signature=x`, { key: null }), 403);
    assert.equal((await t.request('PUT', upload.pathname + upload.search, { raw: 'x', headers: { 'content-type': 'text/plain' }, key: null })).status, 200);
  });

  /**
   * Keys are compared in constant time because they are never compared as text: the service keeps
   * only each key's SHA-256 (src/domain/api-key.ts) and finds a key by the hash of what the request
   * sends (src/store/auth-store.ts). What an index lookup's timing could reveal is how much of that
   * hash matches a stored one, which says nothing of a key (a guess cannot be steered towards a hash
   * prefix and then towards the key). The in-process memo of recent keys is a Map: a hash-table
   * lookup, where text is compared in full only with an entry whose (per-process seeded) string hash
   * matches. The signatures of file URLs and cursors are compared with crypto.timingSafeEqual.
   */
  it('stores keys only as their SHA-256 hashes, and finds them by it', async () => {
    const everything: string[] = [];
    for (const table of await databaseTables(t)) {
      const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(t.database.db);
      everything.push(JSON.stringify(rows));
    }
    const text = everything.join('\n');
    for (const key of [TEST_KEY, keys.revoked as string, keys.expired as string]) {
      assert.ok(!text.includes(key), 'a key is stored as it is');
      assert.ok(!text.includes(key.slice(8)), 'more of a key than its prefix is stored');
      assert.ok(text.includes(hashApiKey(key)), "the key's hash is stored");
    }
    const stored = await t.database.db.selectFrom('rh_api_keys').select('keyHash').execute();
    assert.ok(stored.every((k) => /^[0-9a-f]{64}$/.test(k.keyHash)));
  });
});

// ---------------------------------------------------------------------------------------------
// The log of a real server: keys and signatures never appear in it. What it logs today is errors
// (4xx at info, 5xx at error with their cause), each with its request id; run at level trace, so
// that anything logged at all is looked at.

const BIN = fileURLToPath(new URL('../../bin/rowhouse.mjs', import.meta.url));


interface Server {
  base: string;
  output: () => string;
  stop(): Promise<void>;
}

/** `rowhouse serve` in a child process, at the most verbose log level, its output kept. */
async function serve(scratch: ScratchDatabase, env: Record<string, string>): Promise<Server> {
  const port = await freePort();
  let out = '';
  const child: ChildProcess = spawn(process.execPath, [BIN, 'serve'], {
    env: {
      PATH: process.env.PATH,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: scratch.url,
      ROWHOUSE_DATA_DIR: scratch.dir,
      ROWHOUSE_API_KEY: TEST_KEY,
      ROWHOUSE_PUBLIC_URL: `http://127.0.0.1:${port}`,
      ROWHOUSE_LOG_LEVEL: 'trace',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 60_000;
  while (!out.includes('Rowhouse is listening')) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the server did not start: ${out}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    base: `http://127.0.0.1:${port}`,
    output: () => out,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

eachDatabase('access: what the log keeps', (kind) => {
  let scratch: ScratchDatabase;
  let server: Server;
  before(async () => {
    scratch = await scratchDatabase(kind);
    server = await serve(scratch, { ROWHOUSE_MAX_BODY_BYTES: '2048', ROWHOUSE_MAX_FILE_BYTES: '2048' });
  });
  after(async () => {
    await server?.stop();
    await scratch?.drop();
  });

  it('never holds an API key or a signed URL\'s signature, while the errors of requests carrying them are logged', { timeout: 120_000 }, async () => {
    const secrets: string[] = [TEST_KEY];
    const requestIds: string[] = [];
    const call = async (method: string, url: string, init: { key?: string | null; body?: string; type?: string; headers?: Record<string, string> } = {}) => {
      const headers: Record<string, string> = { ...init.headers };
      const key = init.key === undefined ? TEST_KEY : init.key;
      if (key !== null) headers['x-api-key'] = key;
      if (init.type) headers['content-type'] = init.type;
      const r = await fetch(server.base + url, { method, headers, body: init.body });
      const text = await r.text();
      if (r.status >= 400) requestIds.push(String(r.headers.get('x-request-id')));
      return { status: r.status, text, json: () => JSON.parse(text) };
    };
    const json = 'application/json';

    // Keys: valid, created, revoked, unknown, misplaced; on requests that fail in every way.
    const table = (await call('POST', '/api/tables', { type: json, body: JSON.stringify({ code: 'docs', name: 'Docs', fields: [{ code: 'title', type: 'text', required: true }, { code: 'scan', type: 'file' }] }) })).json();
    const created = (await call('POST', '/api/api-keys', { type: json, body: JSON.stringify({ name: 'logged?' }) })).json();
    const revoked = (await call('POST', '/api/api-keys', { type: json, body: JSON.stringify({ name: 'revoked' }) })).json();
    await call('PUT', `/api/api-keys/${revoked.id}`, { type: json, body: JSON.stringify({ revokedAt: new Date().toISOString() }) });
    const unknown = generateApiKey();
    secrets.push(created.key, revoked.key, unknown);
    const failing: [number, Promise<{ status: number }>][] = [
      [401, call('GET', '/api/flows', { key: revoked.key })],
      [401, call('GET', '/api/flows', { key: unknown })],
      [401, call('POST', '/api/flows', { key: `${TEST_KEY}x`, type: json, body: '{}' })],
      [400, call('POST', '/api/flows', { key: created.key, type: json, body: '{"name": 1}' })],
      [400, call('POST', '/api/flows', { key: created.key, type: json, body: '{"name": ' })],
      [415, call('POST', '/api/flows', { type: 'text/plain', body: 'x' })],
      [413, call('POST', '/api/flows', { type: json, body: JSON.stringify({ name: 'x'.repeat(4096) }) })],
      [404, call('GET', '/api/tables/docs/rows/nope', { key: created.key })],
      [404, call('GET', '/api/nope', { key: created.key })],
      [400, call('GET', '/api/tables/docs/rows/%ZZ', { key: created.key })],
      [400, call('GET', '/api/flows?filter=%7B', { key: created.key })],
      [401, call('GET', '/api/flows', { key: null, headers: { authorization: `Bearer ${created.key}` } })],
      [400, call('POST', `/api/flows?key=${created.key}`, { key: created.key, type: json, body: '{"name":"x"}' })],
      [409, call('DELETE', `/api/members/${table.createdBy}`, { key: created.key })],
    ];
    for (const [status, pending] of failing) assert.equal((await pending).status, status);

    // Signed URLs: altered, expired, with a broken path, too large, without a type, attached, gone.
    const upload = async (rowId: string) => {
      const issued = (await call('POST', `/api/tables/docs/rows/${rowId}/file-upload-url`, { type: json, body: '{"count":1}' })).json();
      return { id: issued.data[0].id as string, url: new URL(issued.data[0].url) };
    };
    const signatureOf = (u: URL) => u.searchParams.get('signature') as string;
    const first = await upload('r1');
    secrets.push(signatureOf(first.url));
    const path1 = first.url.pathname;
    const query1 = first.url.search;
    // The signature with its first character changed (to another one: replacing it with a fixed
    // letter left one signature in 64 unaltered, and the request was accepted).
    const altered = query1.replace(/signature=(.)/, (_, c: string) => `signature=${c === 'A' ? 'B' : 'A'}`);
    const signed: [number, string, string, RequestInit][] = [
      [403, 'PUT', `${path1}${altered}`, { body: 'x', headers: { 'content-type': 'text/plain' } }],
      [403, 'PUT', `${path1}${query1.replace(/expires=\d+/, 'expires=1')}`, { body: 'x', headers: { 'content-type': 'text/plain' } }],
      // Bytes without a Content-Type (fetch gives a string body one).
      [400, 'PUT', `${path1}${query1}`, { body: new Uint8Array([120]) }],
      [413, 'PUT', `${path1}${query1}`, { body: 'x'.repeat(4096), headers: { 'content-type': 'text/plain' } }],
      [400, 'PUT', `${path1.replace(/\/[^/]+$/, '/%ZZ')}${query1}`, { body: 'x', headers: { 'content-type': 'text/plain' } }],
      [404, 'PUT', `/files/nope${query1}`, { body: 'x', headers: { 'content-type': 'text/plain' } }],
      [414, 'PUT', `${path1.replace(/\/[^/]+$/, `/${'x'.repeat(1100)}`)}${query1}`, { body: 'x', headers: { 'content-type': 'text/plain' } }],
      [200, 'PUT', `${path1}${query1}`, { body: 'pdf bytes', headers: { 'content-type': 'application/pdf' } }],
    ];
    for (const [status, method, url, init] of signed) {
      const r = await fetch(server.base + url, { method, ...init });
      await r.text();
      // A 414 is answered before routing, unlogged.
      if (r.status >= 400 && r.status !== 414) requestIds.push(String(r.headers.get('x-request-id')));
      assert.equal(r.status, status, `${method} ${url.slice(0, 80)}`);
    }
    const row = (await call('POST', '/api/tables/docs/rows', { type: json, body: JSON.stringify({ id: 'r1', values: { title: 'one', scan: { id: first.id, name: 'a.pdf' } } }) })).json();
    const download = new URL(row.values.scan.url);
    secrets.push(signatureOf(download));
    assert.equal((await fetch(server.base + path1 + query1, { method: 'PUT', body: 'again', headers: { 'content-type': 'text/plain' } })).status, 409);
    assert.equal((await fetch(server.base + download.pathname + download.search.replace(/name=[^&]*/, 'name=other'))).status, 403);
    assert.equal((await fetch(`${server.base}${download.pathname.replace(/\/[^/]+$/, '/%C0')}${download.search}`)).status, 400);

    // Faults: the storage made unusable, then a signed upload and a write attaching a file (500s are logged with their error).
    const second = await upload('r2');
    secrets.push(signatureOf(second.url));
    const files = path.join(scratch.dir, 'files');
    fs.rmSync(files, { recursive: true, force: true });
    fs.writeFileSync(files, 'not a directory');
    const broken = await fetch(server.base + second.url.pathname + second.url.search, { method: 'PUT', body: 'x', headers: { 'content-type': 'text/plain' } });
    await broken.text();
    assert.equal(broken.status, 500);
    requestIds.push(String(broken.headers.get('x-request-id')));
    const faulty = await fetch(server.base + download.pathname + download.search);
    await faulty.text();
    assert.ok(faulty.status >= 400, `a download from unusable storage answered ${faulty.status}`);
    requestIds.push(String(faulty.headers.get('x-request-id')));
    fs.rmSync(files, { force: true });

    await server.stop();
    const log = server.output();
    for (const secret of secrets) {
      assert.ok(!log.includes(secret), `the log holds ${secret.slice(0, 6)}…: ${log.slice(Math.max(0, log.indexOf(secret) - 300), log.indexOf(secret) + 100)}`);
    }
    assert.doesNotMatch(log, /signature=/, 'a signed URL with its signature');
    // The errors were logged, with their request ids: the log was not simply empty.
    assert.match(log, /"level":50.*request failed/, 'the 500 was logged as an error');
    for (const id of requestIds) assert.ok(log.includes(id), `the error of request ${id} is in the log`);
  });
});
