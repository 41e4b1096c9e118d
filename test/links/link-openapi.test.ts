import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { type Doc, documentChecks } from '../openapi/conformance.ts';
import { type TestApp, eachDatabase, startApp } from '../support/harness.ts';
import { shop } from './support.ts';

/** The table document describes link values (ids or expanded records), expand, the link operators; dateTime as written. */

eachDatabase('links: the table document', (kind) => {
  let t: TestApp;
  let s: Awaited<ReturnType<typeof shop>>;
  let doc: Doc;
  let checks: ReturnType<typeof documentChecks>;
  before(async () => {
    t = await startApp(kind);
    s = await shop(t);
    const fields = [...(await t.get(`/api/tables/${s.orders}`)).body.fields, { code: 'at', type: 'dateTime' }];
    assert.equal((await t.put(`/api/tables/${s.orders}`, { fields })).status, 200);
    const r = await t.get(`/api/tables/${s.ids.orders}/openapi`);
    assert.equal(r.status, 200, r.text);
    doc = r.body;
    checks = documentChecks(doc);
  });
  after(() => t.close());

  it('is a valid document, and real answers with links, expanded or not, conform to it', async () => {
    const result = await new Validator().validate(doc as never);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
    const p = `/api/tables/${s.ids.orders}`;
    await t.post(`/api/tables/${s.customers}/rows`, { id: 'c1', values: { name: 'A' } });
    const body = { id: 'o1', values: { no: 1, customer: 'c1', at: '2024-05-01T09:30+09:00' } };
    checks.conforms(`${p}/rows`, 'post', await t.post(`${p}/rows`, body), body);
    checks.conforms(`${p}/rows`, 'post', await t.post(`${p}/rows`, { values: { customer: 'nope' } })); // 400
    checks.conforms(`${p}/rows/{rowId}`, 'get', await t.get(`${p}/rows/o1`, { query: { expand: 'customer,lines' } }));
    checks.conforms(`${p}/rows/{rowId}`, 'get', await t.get(`${p}/rows/o1`, { query: { expand: 'no' } })); // 400
    checks.conforms(`${p}/rows`, 'get', await t.get(`${p}/rows`, { query: { expand: 'customer', filter: { values: { customer: { _some: { values: { name: { _eq: 'A' } } } } } } } }));
    checks.conforms(`${p}/rows/{rowId}`, 'patch', await t.patch(`${p}/rows/o1`, { values: { customer: null } }, { query: { expand: 'customer' } }));
    checks.conforms('/api/rows-batch', 'post', await t.post('/api/rows-batch', { operations: [{ type: 'update', tableId: s.ids.orders, id: 'o1', values: { customer: 'c1' } }] }, { query: { expand: 'customer' } }));
  });

  it('names expand and the link operators, and takes a date-time without seconds', () => {
    const list = doc.paths[`/api/tables/${s.ids.orders}/rows`].get as unknown as { parameters: { name: string }[] };
    assert.ok(list.parameters.some((x) => x.name === 'expand'));
    const filter = doc.components.schemas.Filter as { properties: { values: { properties: Record<string, { properties: Record<string, unknown> }> } } };
    assert.deepEqual(Object.keys(filter.properties.values.properties.customer.properties).sort(), ['_eq', '_every', '_has', '_isNull', '_none', '_some']);
    assert.deepEqual(Object.keys(filter.properties.values.properties.lines.properties).sort(), ['_every', '_has', '_isNull', '_none', '_some']);
    const create = checks.ajv.compile({ $ref: 'doc#/components/schemas/CreateValues' });
    assert.equal(create({ at: '2024-05-01T09:30Z', lines: ['a', 'b'] }), true, checks.ajv.errorsText(create.errors));
    assert.equal(create({ lines: ['a', 'a'] }), false);
    assert.equal(create({ customer: ['a'] }), false);
    assert.equal(create({ at: '2024-05-01 09:30' }), false);
    const sort = JSON.stringify(doc.components.schemas.Sort);
    assert.ok(!sort.includes('"customer"'), 'a link is no sort key');
  });
});
