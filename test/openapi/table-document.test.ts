import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type Doc, EVERY_TYPE, documentChecks } from './conformance.ts';
import { Validator } from '@seriousme/openapi-schema-validator';
import { type Reply, type TestApp, eachDatabase, expectError, startApp, uploadFile } from '../support/harness.ts';

/**
 * GET /api/tables/{tableId}/openapi (CONTRACT §10): a document a standard OpenAPI 3.1 validator
 * accepts, and that the service's real answers conform to, operation by operation, errors included.
 */



eachDatabase('openapi: a table’s document', (kind) => {
  let t: TestApp;
  let tableId: string;
  let doc: Doc;
  let ajv: ReturnType<typeof documentChecks>['ajv'];
  let conforms: ReturnType<typeof documentChecks>['conforms'];

  before(async () => {
    t = await startApp(kind);
    const made = await t.post('/api/tables', { code: 'invoices', name: 'Invoices', fields: EVERY_TYPE });
    assert.equal(made.status, 201, made.text);
    tableId = made.body.id;
    const r = await t.get(`/api/tables/${tableId}/openapi`);
    assert.equal(r.status, 200, r.text);
    doc = r.body;
    ({ ajv, conforms } = documentChecks(doc));
  });
  after(() => t.close());



  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(doc as never);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
    assert.equal(doc.openapi, '3.1.0');
    assert.deepEqual(doc.servers, [{ url: 'http://rowhouse.test' }]);
  });

  it('describes every rows route, and real answers conform to it, errors included', async () => {
    const p = `/api/tables/${tableId}`;
    assert.deepEqual(Object.keys(doc.paths).sort(), [`${p}/rows`, `${p}/rows-aggregate`, `${p}/rows/{rowId}`, `${p}/rows/{rowId}/file-upload-url`, `${p}/rows-bulk`, `${p}/rows-export`, `${p}/rows-import`, `${p}/changes`, `${p}/changes/stream`, `${p}/changes/stream-url`, `${p}/rows/{rowId}/history`, '/api/rows-batch'].sort());
    const full = {
      title: 'Invoice 1', amount: 12.5, paid: false, at: '2024-05-01T09:30:00+09:00', day: '2024-02-29', clock: '23:59:59',
      month: '2024-12', status: 'paid', meta: { a: [1, 'x'] }, tags: ['x', 2],
    };
    const scan = await uploadFile(t, tableId, 'inv-1', 'pdf bytes', 'application/pdf');
    conforms(`${p}/rows`, 'post', await t.post(`${p}/rows`, { id: 'inv-1', values: { ...full, scan: { id: scan, name: '請求書.pdf' } } }));
    conforms(`${p}/rows`, 'post', await t.post(`${p}/rows`, { values: { title: 'Bare' } }));
    conforms(`${p}/rows`, 'post', await t.post(`${p}/rows`, { id: 'inv-1', values: { amount: 3 }, options: { upsert: true } }));
    conforms(`${p}/rows`, 'post', await t.post(`${p}/rows`, { id: 'inv-1', values: { title: 'dup' } })); // 409
    conforms(`${p}/rows`, 'post', await t.post(`${p}/rows`, { values: { amount: -1 } })); // 400
    conforms(`${p}/rows`, 'post', await t.post(`${p}/rows`, { values: {} }, { key: null })); // 401
    conforms(`${p}/rows`, 'get', await t.get(`${p}/rows`, { query: { pageSize: '1' } }));
    conforms(`${p}/rows`, 'get', await t.get(`${p}/rows`, { query: { filter: { values: { status: { _eq: 'paid' } }, _or: [{ createdAt: { _gt: '2000-01-01T00:00:00Z' } }] }, sort: [{ amount: { direction: 'desc', nulls: 'nullsLast' } }] } }));
    conforms(`${p}/rows`, 'get', await t.get(`${p}/rows`, { query: { pageSize: '0' } })); // 400
    conforms(`${p}/rows/{rowId}`, 'get', await t.get(`${p}/rows/inv-1`));
    conforms(`${p}/rows/{rowId}`, 'get', await t.get(`${p}/rows/nope`)); // 404
    conforms(`${p}/rows/{rowId}`, 'patch', await t.patch(`${p}/rows/inv-1`, { values: { paid: true, tags: null } }));
    conforms(`${p}/rows/{rowId}`, 'patch', await t.patch(`${p}/rows/inv-1`, { values: { title: null } })); // 400
    conforms(`${p}/rows-bulk`, 'post', await t.post(`${p}/rows-bulk`, { data: [{ id: 'b1', values: { title: 'B1' } }, { id: 'b2', values: full }] }));
    conforms(`${p}/rows-bulk`, 'post', await t.post(`${p}/rows-bulk`, { data: [{ id: 'b1', values: { title: 'B1' } }], options: { upsert: true } }));
    conforms(`${p}/rows-bulk`, 'patch', await t.patch(`${p}/rows-bulk`, { data: [{ id: 'b1', values: { amount: 2 } }] }));
    conforms(`${p}/rows-bulk`, 'patch', await t.patch(`${p}/rows-bulk`, { data: [{ id: 'zz', values: { amount: 2 } }] })); // 404
    conforms(`${p}/rows-bulk`, 'delete', await t.delete(`${p}/rows-bulk`, { ids: ['b2'] }));
    conforms(`${p}/rows/{rowId}/file-upload-url`, 'post', await t.post(`${p}/rows/inv-2/file-upload-url`, { count: 2 }));
    conforms(`${p}/rows/{rowId}/file-upload-url`, 'post', await t.post(`${p}/rows/inv-2/file-upload-url`, { count: 51 })); // 400
    conforms('/api/rows-batch', 'post', await t.post('/api/rows-batch', { operations: [
      { type: 'create', tableId, id: 'c1', values: { title: 'C1' } },
      { type: 'update', tableId: 'invoices', id: 'c1', values: { amount: 1 } },
      { type: 'delete', tableId, id: 'c1' },
    ] }));
    conforms('/api/rows-batch', 'post', await t.post('/api/rows-batch', { operations: [{ type: 'delete', tableId, id: 'missing' }] })); // 404 with index
    conforms(`${p}/rows/{rowId}`, 'delete', await t.delete(`${p}/rows/b1`));
    conforms(`${p}/rows/{rowId}`, 'delete', await t.delete(`${p}/rows/b1`)); // 404
    const exported = await t.get(`${p}/rows-export`, { query: { format: 'csv', encoding: 'utf8', newline: 'lf' } });
    assert.equal(exported.status, 200);
    assert.ok(doc.paths[`${p}/rows-export`].get.responses['200'].content?.['text/csv']);
    conforms(`${p}/rows-export`, 'get', await t.get(`${p}/rows-export`, { query: { format: 'csv' } })); // 400
    const csv = (body: string, query: string) => t.request('POST', `${p}/rows-import?${query}`, { raw: body, headers: { 'content-type': 'text/csv' } });
    conforms(`${p}/rows-import`, 'post', await csv('id,title,amount,scan\nimp-1,Imported,5,\n', 'format=csv&encoding=utf8'));
    conforms(`${p}/rows-import`, 'post', await csv('title,amount\nx,notanumber\n', 'format=csv&encoding=utf8&atomic=false'));
    conforms(`${p}/rows-import`, 'post', await csv('title,amount\nx,notanumber\n', 'format=csv&encoding=utf8')); // 400
    conforms(`${p}/changes`, 'get', await t.get(`${p}/changes`, { query: { limit: '5' } }));
    conforms(`${p}/changes`, 'get', await t.get(`${p}/changes`, { query: { after: '3', limit: '1000' } }));
    conforms(`${p}/changes`, 'get', await t.get(`${p}/changes`, { query: { limit: '0' } })); // 400
  });

  it('rejects, by its own schemas, what the service rejects', () => {
    const create = ajv.compile({ $ref: 'doc#/components/schemas/CreateRow' });
    assert.equal(create({ values: { title: 'ok', status: 'paid', scan: null } }), true, ajv.errorsText(create.errors));
    assert.equal(create({ values: { title: 'x'.repeat(101) } }), false);
    assert.equal(create({ values: { status: 'nope', title: 'x' } }), false);
    assert.equal(create({ values: { amount: 1 } }), false, 'title is required');
    assert.equal(create({ values: { title: 'x', scan: { id: 'not-a-uuid', name: 'a' } } }), false);
    assert.equal(create({ values: { title: 'x', scan: { id: '00000000-0000-4000-8000-000000000000', name: 'a/b' } } }), false);
    assert.equal(create({ values: { title: 'x', nope: 1 } }), false);
  });

  it('follows the table’s fields at once', async () => {
    const fields = [...(await t.get(`/api/tables/${tableId}`)).body.fields, { code: 'extra', type: 'number' }];
    assert.equal((await t.put(`/api/tables/${tableId}`, { fields })).status, 200);
    const r = await t.get(`/api/tables/${tableId}/openapi`);
    assert.ok('extra' in r.body.components.schemas.Values.properties);
  });

  it('answers 404 to a table code, an unknown id and a deleted table, and 401 without a valid key', async () => {
    expectError(await t.get('/api/tables/invoices/openapi'), 404);
    expectError(await t.get('/api/tables/00000000-0000-4000-8000-000000000000/openapi'), 404);
    const gone = await t.post('/api/tables', { code: 'gone', name: 'gone', fields: [] });
    assert.equal((await t.delete(`/api/tables/${gone.body.id}`)).status, 200);
    expectError(await t.get(`/api/tables/${gone.body.id}/openapi`), 404);
    expectError(await t.get(`/api/tables/${tableId}/openapi`, { key: null }), 401);
    const key = await t.post('/api/api-keys', { name: 'k', memberId: t.ownerId });
    assert.equal((await t.get(`/api/tables/${tableId}/openapi`, { key: key.body.key })).status, 200);
    assert.equal((await t.put(`/api/api-keys/${key.body.id}`, { revokedAt: new Date().toISOString() })).status, 200);
    expectError(await t.get(`/api/tables/${tableId}/openapi`, { key: key.body.key }), 401);
  });

  it('describes a table of 500 fields (the time is printed, not asserted)', async () => {
    const fields = Array.from({ length: 500 }, (_, i) => ({ ...EVERY_TYPE[i % EVERY_TYPE.length], code: `f${i}`, required: false }));
    const made = await t.post('/api/tables', { code: 'wide', name: 'wide', fields });
    assert.equal(made.status, 201, made.text);
    const t0 = performance.now();
    const r = await t.get(`/api/tables/${made.body.id}/openapi`);
    const ms = performance.now() - t0;
    assert.equal(r.status, 200);
    const result = await new Validator().validate(r.body);
    assert.equal(result.valid, true);
    console.log(`# ${kind}: the document of a 500-field table (${(r.text.length / 1024).toFixed(0)} KiB) took ${ms.toFixed(1)} ms`);
  });
});
