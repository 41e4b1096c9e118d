import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type Doc, documentChecks } from '../openapi/conformance.ts';
import { TEST_KEY, eachDatabase } from '../support/harness.ts';
import { type ListeningApp, startListening } from '../support/listening.ts';
import { openSse } from './sse.ts';

/**
 * Issue 31 item 4: a table's OpenAPI document describes its change stream, its signed stream URL and
 * its rows' history, and the service's real answers conform to it (the stream's status and type too).
 */
eachDatabase('openapi: change stream and row history', (kind) => {
  let t: ListeningApp;
  let tableId: string;
  let p: string;
  let conforms: ReturnType<typeof documentChecks>['conforms'];

  before(async () => {
    t = await startListening(kind);
    const made = await t.post('/api/tables', { code: 'docs', name: 'Docs', fields: [{ code: 'status', type: 'select', options: { choices: ['a', 'b'] } }] });
    tableId = made.body.id;
    p = `/api/tables/${tableId}`;
    const r = await t.get(`${p}/openapi`);
    assert.equal(r.status, 200, r.text);
    ({ conforms } = documentChecks(r.body as Doc));
  });
  after(() => t.close());

  it('the history, the stream URL and the stream answer as the document says', async () => {
    assert.equal((await t.post(`${p}/rows`, { id: 'r', values: { status: 'a' } })).status, 201);
    assert.equal((await t.patch(`${p}/rows/r`, { values: { status: 'b' } })).status, 200);
    conforms(`${p}/rows/{rowId}/history`, 'get', await t.get(`${p}/rows/r/history?pageSize=1`));
    conforms(`${p}/rows/{rowId}/history`, 'get', await t.get(`${p}/rows/r/history`));
    conforms(`${p}/rows/{rowId}/history`, 'get', await t.get(`${p}/rows/none/history`)); // 404
    conforms(`${p}/rows/{rowId}/history`, 'get', await t.get(`${p}/rows/r/history?pageSize=0`)); // 400
    const body = { filter: { values: { status: { _eq: 'a' } } }, expiresIn: 60 };
    conforms(`${p}/changes/stream-url`, 'post', await t.post(`${p}/changes/stream-url`, body), body);
    conforms(`${p}/changes/stream-url`, 'post', await t.post(`${p}/changes/stream-url`, { expiresIn: 0 })); // 400
    conforms(`${p}/changes/stream`, 'get', await t.get(`${p}/changes/stream?after=x`)); // 400

    const c = await openSse(`${t.base}${p}/changes/stream?after=0`, { 'x-api-key': TEST_KEY });
    try {
      await c.until(() => c.events.length === 2, 2000, 'the two changes');
      conforms(`${p}/changes/stream`, 'get', { status: c.status, headers: c.headers as Record<string, string>, body: undefined, text: '' });
    } finally {
      c.close();
    }
  });
});
