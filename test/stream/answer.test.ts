import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, it } from 'node:test';
import { type TestApp, eachDatabase, startApp } from '../support/harness.ts';
import { type SseConnection, openSse } from './sse.ts';

/**
 * Issue 31: a change stream writes its events to the response itself (http/change-stream-routes.ts
 * takes the answer over from Fastify): its answer still carries the headers every answer does (set
 * by the hooks: x-request-id), its body is the events with no chunk framing, running until the
 * connection closes (so Connection: close), and a server that ends the stream ends the body.
 */
eachDatabase('the change stream answer', (kind) => {
  let t: TestApp;
  let base: string;
  const open: SseConnection[] = [];

  before(async () => {
    t = await startApp(kind);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  });
  after(async () => {
    for (const c of open) c.close();
    await t.close();
  });

  it('carries the hooks\' headers, and its events unframed until the connection closes', async () => {
    assert.equal((await t.post('/api/tables', { code: 'answered', name: 'answered', fields: [{ code: 'n', type: 'number' }] })).status, 201);
    const made = await t.post('/api/api-keys', { name: 'answered' });
    assert.equal(made.status, 201, made.text);
    const c = await openSse(`${base}/api/tables/answered/changes/stream`, { 'x-api-key': made.body.key, 'x-request-id': 'stream-request-1' });
    open.push(c);
    assert.equal(c.status, 200);
    assert.equal(c.headers['content-type'], 'text/event-stream; charset=utf-8');
    assert.equal(c.headers['cache-control'], 'no-store');
    assert.equal(c.headers['x-accel-buffering'], 'no');
    assert.equal(c.headers['x-request-id'], 'stream-request-1');
    assert.equal(c.headers['transfer-encoding'], undefined);
    assert.equal(c.headers.connection, 'close');
    await c.until(() => c.comments.includes('open'), 5000, 'open');
    for (const id of ['one', 'two']) assert.equal((await t.post('/api/tables/answered/rows', { id, values: { n: 1 } })).status, 201);
    await c.until(() => c.changes().length === 2, 5000, 'the changes');
    assert.deepEqual(c.changes().map((ch) => ch.rowId), ['one', 'two']);
    // The server ends the stream (its key is revoked): the body ends.
    assert.equal((await t.put(`/api/api-keys/${made.body.id}`, { revokedAt: new Date().toISOString() })).status, 200);
    await c.until(() => false, 10_000, 'the end').catch(() => {});
    assert.notEqual(c.endedAt, undefined, 'the stream ended');
    assert.equal(c.changes().length, 2);
  });
});
