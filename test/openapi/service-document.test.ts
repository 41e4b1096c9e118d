import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type Doc, type Operation, documentChecks, pointer } from './conformance.ts';
import { Validator } from '@seriousme/openapi-schema-validator';
import { type Reply, type TestApp, eachDatabase, expectError, startApp, uploadFile } from '../support/harness.ts';
import { registeredRoutes } from '../support/routes.ts';

/**
 * GET /openapi.json and /docs (CONTRACT §10): the whole service's document, which a standard
 * OpenAPI 3.1 validator accepts, which names every route the app registers (and no other), and
 * which the service's real answers conform to; both served without a key, while /api still needs one.
 */


const METHODS = ['get', 'put', 'post', 'patch', 'delete'];

/** A route's shape with its parameters unnamed: /api/tables/:table/rows and /api/tables/{tableIdOrCode}/rows are one route. */
const shape = (method: string, url: string) => `${method} ${url.replace(/:[A-Za-z]+|\{[A-Za-z]+\}/g, '{}')}`;

eachDatabase('openapi: the service’s document and /docs', (kind) => {
  let t: TestApp;
  let doc: Doc;
  let ajv: ReturnType<typeof documentChecks>['ajv'];
  let conforms: ReturnType<typeof documentChecks>['conforms'];

  before(async () => {
    t = await startApp(kind);
    const r = await t.get('/openapi.json', { key: null });
    assert.equal(r.status, 200, r.text);
    doc = r.body;
    ({ ajv, conforms } = documentChecks(doc));
  });
  after(() => t.close());



  it('is a valid OpenAPI 3.1 document, with the error schema on every error, the key scheme, and the public URL', async () => {
    const result = await new Validator().validate(structuredClone(doc) as never);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
    assert.equal(doc.openapi, '3.1.0');
    assert.deepEqual(doc.servers, [{ url: 'http://rowhouse.test' }]);
    assert.deepEqual(doc.security, [{ apiKey: [] }]);
    assert.deepEqual((doc.components as Record<string, unknown>).securitySchemes, { apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } });
    const ids = new Set<string>();
    const open: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const method of METHODS.filter((m) => m in item)) {
        const op = item[method];
        assert.ok(!ids.has(op.operationId), `operationId ${op.operationId} twice`);
        ids.add(op.operationId);
        if (op.security?.length === 0) open.push(`${method} ${path}`);
        for (const [status, response] of Object.entries(op.responses)) {
          if (Number(status) < 400) continue;
          assert.deepEqual(response.content?.['application/json']?.schema, { $ref: '#/components/schemas/Error' }, `${method} ${path} ${status}`);
        }
        // Every schema the operation names compiles: its references resolve.
        for (const [status, response] of Object.entries(op.responses)) {
          if (response.content?.['application/json']) ajv.compile({ $ref: `doc#/${pointer('paths', path, method, 'responses', status, 'content', 'application/json', 'schema')}` });
        }
      }
    }
    assert.deepEqual(open.sort(), [
      'get /console', 'get /docs', 'get /files/{tableId}/{rowId}/{fileId}', 'get /healthz', 'get /openapi.json', 'get /readyz', 'get /streams/tables/{tableId}/changes', 'put /files/{tableId}/{rowId}/{fileId}',
    ]);
  });

  it('describes every route the app registers, and no other', () => {
    // Every route the app registers (test/support/routes.ts).
    const routes = registeredRoutes(t.app).map((r) => ({ method: r.method.toLowerCase(), url: r.url }));
    assert.ok(routes.length > 40, 'the routes were seen as they were registered');
    // HEAD answers every GET; the pages' own files are not API.
    const served = new Set(routes.filter((r) => r.method !== 'head' && !r.url.startsWith('/docs/') && !r.url.startsWith('/console/')).map((r) => shape(r.method, r.url)));
    const described = new Set(Object.entries(doc.paths).flatMap(([path, item]) => METHODS.filter((m) => m in item).map((m) => shape(m, path))));
    assert.deepEqual([...served].filter((r) => !described.has(r)), [], 'routes the document leaves out');
    assert.deepEqual([...described].filter((r) => !served.has(r)), [], 'operations no route serves');
    for (const resource of ['environment-variables', 'flows', 'members', 'api-keys', 'tables']) {
      for (const suffix of ['', '/{id}', '/create-many', '/update-many', '/delete-many']) assert.ok(doc.paths[`/api/${resource}${suffix}`], `/api/${resource}${suffix}`);
    }
    assert.ok(doc.paths['/api/tables/{tableIdOrCode}/rows'].get);
  });

  it('takes what the service takes, and the service’s answers conform to it, errors included', async () => {
    // Generic resources: list with relations, create (the key answered once), get, update, delete, the *-many forms.
    conforms('/api/members', 'get', await t.get('/api/members', { query: { paging: { limit: 5 }, sorting: { name: 'asc' }, relations: ['createdByMember'] } }));
    conforms('/api/members', 'get', await t.get('/api/members', { query: { filter: { nope: { eq: 1 } } } })); // 400
    conforms('/api/members', 'get', await t.get('/api/members', { key: null })); // 401
    const keyBody = { name: 'ci', expiresAt: '2999-01-01T00:00:00Z' };
    const key = await t.post('/api/api-keys', keyBody);
    conforms('/api/api-keys', 'post', key, keyBody);
    assert.equal(typeof key.body.key, 'string');
    conforms('/api/api-keys/{id}', 'get', await t.get(`/api/api-keys/${key.body.id}`, { query: { relations: ['member'] } }));
    conforms('/api/api-keys', 'get', await t.get('/api/api-keys', { query: { filter: { revokedAt: { is: null }, or: [{ name: { iLike: 'C%' } }, { name: { in: ['x'] } }] } } }));
    conforms('/api/api-keys/{id}', 'get', await t.get('/api/api-keys/00000000-0000-4000-8000-000000000000')); // 404
    const revoke = { revokedAt: new Date().toISOString() };
    conforms('/api/api-keys/{id}', 'put', await t.put(`/api/api-keys/${key.body.id}`, revoke), revoke);
    const variables = [{ name: 'A', value: '1' }, { name: 'B', value: '2', description: 'two' }];
    const made = await t.post('/api/environment-variables/create-many', variables);
    conforms('/api/environment-variables/create-many', 'post', made, variables);
    conforms('/api/environment-variables/create-many', 'post', await t.post('/api/environment-variables/create-many', [{ name: 'A', value: 'again' }])); // 409
    const changes = [{ id: made.body.data[0].id, value: '10' }];
    conforms('/api/environment-variables/update-many', 'put', await t.put('/api/environment-variables/update-many', changes), changes);
    const ids = made.body.data.map((v: { id: string }) => v.id);
    conforms('/api/environment-variables/delete-many', 'delete', await t.delete('/api/environment-variables/delete-many', ids), ids);
    const flow = { name: 'f', enabled: false, definition: {} };
    const f = await t.post('/api/flows', flow);
    conforms('/api/flows', 'post', f, flow);
    conforms('/api/flows/{id}', 'delete', await t.delete(`/api/flows/${f.body.id}`));
    conforms('/api/members/{id}', 'delete', await t.delete(`/api/members/${t.ownerId}`)); // 409: the owner
    conforms('/api/flows', 'post', await t.post('/api/flows', { name: 1 })); // 400

    // Tables: their fields as read, one shape per type.
    const table = {
      code: 'orders',
      name: 'Orders',
      fields: [
        { code: 'title', type: 'text', required: true, options: { maxLength: 50 } },
        { code: 'amount', type: 'number', options: { indexed: true } },
        { code: 'status', type: 'select', options: { choices: ['open', 'done'] } },
        { code: 'scan', type: 'file' },
      ],
    };
    const created = await t.post('/api/tables', table);
    conforms('/api/tables', 'post', created, table);
    const tableId = created.body.id;
    conforms('/api/tables/{id}', 'get', await t.get('/api/tables/orders'));
    conforms('/api/tables', 'get', await t.get('/api/tables'));
    conforms('/api/tables/{tableId}/openapi', 'get', await t.get(`/api/tables/${tableId}/openapi`));
    conforms('/api/tables/{tableId}/openapi', 'get', await t.get('/api/tables/orders/openapi')); // 404: by id only

    // Rows of any table, by id or code.
    const rows = '/api/tables/{tableIdOrCode}/rows';
    const scan = await uploadFile(t, 'orders', 'o-1', 'pdf', 'application/pdf');
    const row = { id: 'o-1', values: { title: 'First', amount: 3, status: 'open', scan: { id: scan, name: 'a.pdf' } } };
    conforms(rows, 'post', await t.post('/api/tables/orders/rows', row), row);
    conforms(rows, 'post', await t.post('/api/tables/orders/rows', row)); // 409
    conforms(rows, 'post', await t.post('/api/tables/nope/rows', { values: {} })); // 404
    conforms(rows, 'get', await t.get(`/api/tables/${tableId}/rows`, { query: { pageSize: '1', filter: { values: { amount: { _gt: 1 } } }, sort: [{ amount: { direction: 'desc', nulls: 'nullsLast' } }] } }));
    conforms(`${rows}/{rowId}`, 'get', await t.get('/api/tables/orders/rows/o-1'));
    const patch = { values: { amount: 4 } };
    conforms(`${rows}/{rowId}`, 'patch', await t.patch('/api/tables/orders/rows/o-1', patch), patch);
    const bulk = { data: [{ id: 'o-2', values: { title: 'Second' } }] };
    conforms('/api/tables/{tableIdOrCode}/rows-bulk', 'post', await t.post('/api/tables/orders/rows-bulk', bulk), bulk);
    const batch = { operations: [{ type: 'update', tableId: 'orders', id: 'o-2', values: { amount: 1 } }, { type: 'delete', tableId, id: 'o-2' }] };
    conforms('/api/rows-batch', 'post', await t.post('/api/rows-batch', batch), batch);
    conforms('/api/tables/{tableIdOrCode}/rows-export', 'get', await t.get('/api/tables/orders/rows-export', { query: { format: 'jsonl', encoding: 'utf8', newline: 'lf' } }));
    conforms(`${rows}/{rowId}/file-upload-url`, 'post', await t.post('/api/tables/orders/rows/o-3/file-upload-url', { count: 1 }), { count: 1 });
    conforms(`${rows}/{rowId}`, 'delete', await t.delete('/api/tables/orders/rows/o-1'));

    // The signed file URLs and the health checks, without a key.
    const issued = await t.post(`/api/tables/${tableId}/rows/o-4/file-upload-url`, { count: 1 });
    const upload = new URL(issued.body.data[0].url);
    const files = '/files/{tableId}/{rowId}/{fileId}';
    conforms(files, 'put', await t.request('PUT', upload.pathname + upload.search, { raw: 'bytes', headers: { 'content-type': 'text/plain' }, key: null }));
    conforms(files, 'put', await t.request('PUT', `${upload.pathname}?expires=1&signature=x`, { raw: 'bytes', headers: { 'content-type': 'text/plain' }, key: null })); // 403
    conforms('/healthz', 'get', await t.get('/healthz', { key: null }));
    conforms('/readyz', 'get', await t.get('/readyz', { key: null }));
    conforms('/docs', 'get', await t.get('/docs', { key: null }));
  });

  it('lists 403 and 429 wherever a key is taken; a scoped key’s 403 and a limited key’s 429 on the generic resources conform to it', async () => {
    // Every operation that takes a key may refuse it for a scope or table it lacks, or for its rate limit (CONTRACT §12).
    const missing: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const method of METHODS.filter((m) => m in item)) {
        const op = item[method];
        if (op.security?.length === 0) continue;
        for (const status of ['403', '429']) if (!(status in op.responses)) missing.push(`${method} ${path} ${status}`);
      }
    }
    assert.deepEqual(missing, [], 'keyed operations without 403 or 429');

    // A key with rows:read alone is refused every generic resource's routes.
    const made = await t.post('/api/api-keys', { name: 'rows only', scopes: ['rows:read'] });
    assert.equal(made.status, 201, made.text);
    const key = made.body.key as string;
    const id = '00000000-0000-4000-8000-000000000000';
    const bodies: Record<string, Record<string, unknown>> = {
      'environment-variables': { name: 'X', value: '1' },
      flows: { name: 'f', definition: {} },
      members: { name: 'm' },
      'api-keys': { name: 'k', scopes: ['rows:read'] },
      tables: { code: 'refused', name: 'Refused', fields: [] },
    };
    for (const [resource, body] of Object.entries(bodies)) {
      const base = `/api/${resource}`;
      const refused = (path: string, method: string, reply: Reply) => {
        expectError(reply, 403);
        conforms(path, method, reply);
      };
      refused(base, 'get', await t.get(base, { key }));
      refused(base, 'post', await t.post(base, body, { key }));
      refused(`${base}/create-many`, 'post', await t.post(`${base}/create-many`, [body], { key }));
      refused(`${base}/update-many`, 'put', await t.put(`${base}/update-many`, [{ id, ...body }], { key }));
      refused(`${base}/delete-many`, 'delete', await t.delete(`${base}/delete-many`, [id], { key }));
      refused(`${base}/{id}`, 'get', await t.get(`${base}/${id}`, { key }));
      refused(`${base}/{id}`, 'put', await t.put(`${base}/${id}`, body, { key }));
      refused(`${base}/{id}`, 'delete', await t.delete(`${base}/${id}`, undefined, { key }));
    }
    for (const [path, url] of [['/api/flow-deliveries', '/api/flow-deliveries'], ['/api/flow-deliveries/{id}', `/api/flow-deliveries/${id}`]]) {
      const reply = await t.get(url, { key });
      expectError(reply, 403);
      conforms(path, 'get', reply);
    }
    const retry = await t.post(`/api/flow-deliveries/${id}/retry`, undefined, { key });
    expectError(retry, 403);
    conforms('/api/flow-deliveries/{id}/retry', 'post', retry);
    // Its own record, with its member embedded: that needs resources:read.
    const me = await t.get('/api/api-keys/me', { key, query: { relations: ['member'] } });
    expectError(me, 403);
    conforms('/api/api-keys/me', 'get', me);

    // A key of one request an hour: its second is a 429.
    const once = await t.post('/api/api-keys', { name: 'once', rateLimit: { requests: 1, perSeconds: 3600 } });
    assert.equal(once.status, 201, once.text);
    conforms('/api/members', 'get', await t.get('/api/members', { key: once.body.key }));
    for (const [path, method, reply] of [
      ['/api/members', 'get', await t.get('/api/members', { key: once.body.key })],
      ['/api/api-keys/me', 'get', await t.get('/api/api-keys/me', { key: once.body.key })],
      ['/api/environment-variables', 'post', await t.post('/api/environment-variables', bodies['environment-variables'], { key: once.body.key })],
    ] as const) {
      expectError(reply, 429);
      conforms(path, method, reply);
    }
  });

  it('is served without a key, the same text each time; /api still needs one', async () => {
    const first = await t.get('/openapi.json', { key: null });
    const second = await t.get('/openapi.json', { key: null });
    assert.equal(first.status, 200);
    assert.match(String(first.headers['content-type']), /^application\/json/);
    assert.equal(second.text, first.text);
    assert.equal(second.headers.etag, first.headers.etag);
    const again = await t.get('/openapi.json', { key: null, headers: { 'if-none-match': String(first.headers.etag) } });
    assert.equal(again.status, 304);
    assert.equal(again.text, '');
    expectError(await t.get('/api/members', { key: null }), 401);
    expectError(await t.get('/api/members', { key: 'rh_not_a_key_at_all_0123456789' }), 401);
  });

  it('/docs: a page of Swagger UI from the installed package, pointed at /openapi.json, with its files', async () => {
    const page = await t.get('/docs', { key: null });
    assert.equal(page.status, 200);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    assert.match(String(page.headers['content-security-policy']), /script-src 'self'(;|$)/);
    assert.doesNotMatch(page.text, /<script>|https?:\/\//, 'no inline script and nothing from another origin');
    const start = await t.get('/docs/start.js', { key: null });
    assert.equal(start.status, 200);
    assert.match(start.text, /url: 'openapi\.json'/);
    assert.doesNotMatch(start.text, /petstore/);
    assert.match(start.text, /validatorUrl: null/);
    for (const [file, type] of [['swagger-ui-bundle.js', 'text/javascript'], ['swagger-ui.css', 'text/css'], ['favicon-32x32.png', 'image/png']]) {
      assert.ok(page.text.includes(`docs/${file}`), `the page loads ${file}`);
      const r = await t.get(`/docs/${file}`, { key: null });
      assert.equal(r.status, 200, file);
      assert.equal(String(r.headers['content-type']).split(';')[0], type);
      assert.ok(Number(r.headers['content-length']) > 0, `${file}: a length`);
      assert.match(String(r.headers['cache-control']), /max-age=\d+/);
      const cached = await t.get(`/docs/${file}`, { key: null, headers: { 'if-none-match': String(r.headers.etag) } });
      assert.equal(cached.status, 304, file);
    }
    assert.ok((await t.get('/docs/swagger-ui-bundle.js', { key: null })).text.length > 500_000, 'the bundle itself');
    const slash = await t.get('/docs/', { key: null });
    assert.equal(slash.status, 301);
    assert.equal(slash.headers.location, '../docs');
    expectError(await t.get('/docs/index.html', { key: null }), 404);
  });
});
