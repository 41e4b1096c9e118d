import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { type Doc, EVERY_TYPE, documentChecks, pointer } from '../openapi/conformance.ts';
import { type TestApp, eachDatabase, startApp } from '../support/harness.ts';

/**
 * The table's OpenAPI document describes GET /rows-aggregate (CONTRACT §10, §13): the document
 * stays valid OpenAPI 3.1, the parameters sent are what its schemas take, and real answers (the
 * page of groups, 400, 401, 404) conform to it.
 */

eachDatabase('aggregates: the table’s OpenAPI document', (kind) => {
  let t: TestApp;
  let tableId: string;
  let doc: Doc;
  before(async () => {
    t = await startApp(kind);
    const made = await t.post('/api/tables', { code: 'invoices', name: 'Invoices', fields: EVERY_TYPE });
    assert.equal(made.status, 201, made.text);
    tableId = made.body.id;
    const rows = [
      { title: 'a', amount: 3, paid: true, at: '2026-01-31T15:00:00Z', day: '2026-01-01', clock: '09:00:00', month: '2026-01', status: 'paid' },
      { title: 'b', amount: 4.5, paid: false, at: '2026-01-31T14:00:00Z', day: '2026-01-04', clock: '10:00:00', month: '2026-02', status: 'open' },
      { title: 'c' },
    ];
    assert.equal((await t.post('/api/tables/invoices/rows-bulk', { data: rows.map((values) => ({ values })) })).status, 201);
    doc = (await t.get(`/api/tables/${tableId}/openapi`)).body;
  });
  after(() => t.close());

  it('is valid, lists the route with its parameters, and the answers conform', async () => {
    const result = await new Validator().validate(doc as never);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
    const path = `/api/tables/${tableId}/rows-aggregate`;
    const op = doc.paths[path]?.get as unknown as { parameters: { name: string }[] };
    assert.deepEqual(op.parameters.map((p) => p.name), ['groupBy', 'metrics', 'filter', 'having', 'sort', 'pageSize', 'cursor']);
    const { ajv, conforms } = documentChecks(doc);
    const query = {
      groupBy: [{ field: 'at', bucket: 'month', timeZone: 'Asia/Tokyo' }, { field: 'paid' }, { field: 'clock' }, { field: 'status' }],
      metrics: [{ fn: 'count' }, { fn: 'sum', field: 'amount', as: 'total' }, { fn: 'max', field: 'at' }, { fn: 'min', field: 'paid' }, { fn: 'countDistinct', field: 'title' }],
      filter: { values: { amount: { _gte: 0 } } },
      having: { _or: [{ count: { _gt: 0 } }, { total: { _isNull: true } }] },
      sort: [{ total: { direction: 'desc', nulls: 'nullsLast' } }],
    };
    for (const [name, value] of Object.entries(query)) {
      const index = op.parameters.findIndex((p) => p.name === name);
      const validate = ajv.compile({ $ref: `doc#/${pointer('paths', path, 'get', 'parameters', String(index), 'schema', 'contentSchema')}` });
      assert.ok(validate(value), `${name}: ${ajv.errorsText(validate.errors)}`);
    }
    const page = await t.get(path, { query: { ...query, pageSize: '1' } });
    assert.equal(page.status, 200, page.text);
    assert.deepEqual(page.body.data[0], { group: { at: '2026-01', paid: false, clock: '10:00:00', status: 'open' }, metrics: { count: 1, total: 4.5, max_at: '2026-01-31T14:00:00.000Z', min_paid: false, countDistinct_title: 1 } });
    conforms(path, 'get', page);
    conforms(path, 'get', await t.get(page.body.nextUrl.slice('http://rowhouse.test'.length)));
    conforms(path, 'get', await t.get(path, { query: { groupBy: [{ field: 'day', bucket: 'week' }, { field: 'month', bucket: 'quarter' }, { field: 'createdBy' }] } }));
    conforms(path, 'get', await t.get(path, { query: { groupBy: [{ field: 'meta' }] } })); // 400
    conforms(path, 'get', await t.get(path, { key: null })); // 401
    conforms(`/api/tables/{t}/rows-aggregate`.replace('{t}', tableId), 'get', await t.get(`/api/tables/nope/rows-aggregate`)); // 404
  });
});
