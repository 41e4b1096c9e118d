import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { TEST_KEY, type TestApp, eachDatabase, startApp } from '../support/harness.ts';

/**
 * The access log (issue 17, item 4): one line per request at info, with method, route pattern,
 * status, duration, request id and the API key's id; never the key, a signed URL's signature or
 * a webhook secret. ROWHOUSE_LOG_LEVEL=warn silences it.
 */

/** The log as written: every line, and the whole text (to look for what must never be in it). */
class Captured {
  text = '';
  write(chunk: string): boolean {
    this.text += chunk;
    return true;
  }
  lines(): Record<string, any>[] {
    return this.text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
  }
  requests(): Record<string, any>[] {
    return this.lines().filter((l) => l.msg === 'request' || l.msg === 'request aborted');
  }
  clear(): void {
    this.text = '';
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

eachDatabase('access log', (kind) => {
  describe('at info (the default)', () => {
    let t: TestApp;
    const log = new Captured();
    let keyId: string;

    before(async () => {
      t = await startApp(kind, {}, { logStream: log as unknown as NodeJS.WritableStream });
      const made = await t.post('/api/tables', { code: 'notes', name: 'Notes', fields: [{ code: 'title', type: 'text' }, { code: 'doc', type: 'file' }] });
      assert.equal(made.status, 201, made.text);
      const keys = await t.get('/api/api-keys');
      keyId = keys.body.data.find((k: { name: string }) => k.name === 'ROWHOUSE_API_KEY').id;
    });
    after(() => t.close());

    it('one line per request: method, route pattern, status, duration, request id, key id', async () => {
      log.clear();
      const filter = JSON.stringify({ values: { title: { _eq: 'secret-looking filter value' } } });
      const listed = await t.get('/api/tables/notes/rows', { query: { filter }, headers: { 'x-request-id': 'req-list-1' } });
      assert.equal(listed.status, 200);
      const created = await t.post('/api/tables/notes/rows', { id: 'n1', values: { title: 'first' } });
      assert.equal(created.status, 201);
      const health = await t.get('/healthz', { key: null });
      assert.equal(health.status, 200);

      const lines = log.requests();
      assert.equal(lines.length, 3, log.text);
      const [list, create, healthz] = lines;
      assert.equal(list.level, 30, 'info');
      assert.equal(list.reqId, 'req-list-1');
      assert.equal(list.method, 'GET');
      assert.equal(list.route, '/api/tables/:table/rows');
      assert.equal(list.status, 200);
      assert.equal(typeof list.ms, 'number');
      assert.ok(list.ms >= 0);
      assert.equal(list.keyId, keyId);
      assert.equal(create.method, 'POST');
      assert.equal(create.status, 201);
      assert.equal(create.reqId, created.headers['x-request-id']);
      assert.equal(create.keyId, keyId);
      assert.equal(healthz.route, '/healthz');
      assert.equal(healthz.keyId, null);
      // The route, never the URL: no query, no row ids.
      assert.ok(!log.text.includes('secret-looking'), 'the query is not logged');
      assert.ok(!log.text.includes(TEST_KEY), 'the key is not logged');
    });

    it('error answers: their status and code; an unknown route its path without the query', async () => {
      log.clear();
      assert.equal((await t.get('/api/tables/notes/rows', { key: null })).status, 401);
      assert.equal((await t.get('/api/nope?token=hidden-value')).status, 404);
      assert.equal((await t.get('/api/tables/notes/rows', { query: { pageSize: '0' } })).status, 400);
      const [unauthorized, missing, invalid] = log.requests();
      assert.deepEqual([unauthorized.status, unauthorized.code, unauthorized.keyId], [401, 'unauthorized', null]);
      assert.deepEqual([missing.status, missing.code, missing.route, missing.path], [404, 'not_found', null, '/api/nope']);
      assert.deepEqual([invalid.status, invalid.code, invalid.keyId], [400, 'invalid_request', keyId]);
      assert.ok(!log.text.includes('hidden-value'));
      assert.equal(log.lines().filter((l) => l.level < 30).length, 0, 'nothing below info is written at info');
    });

    it("never a signed URL's signature, a key, or a webhook secret", async () => {
      log.clear();
      const issued = await t.post('/api/tables/notes/rows/n2/file-upload-url', { count: 1 });
      const upload = new URL(issued.body.data[0].url);
      const put = await t.request('PUT', upload.pathname + upload.search, { raw: 'bytes', headers: { 'content-type': 'text/plain' }, key: null });
      assert.equal(put.status, 200, put.text);
      const made = await t.post('/api/tables/notes/rows', { id: 'n2', values: { doc: { id: issued.body.data[0].id, name: 'a.txt' } } });
      assert.equal(made.status, 201, made.text);
      const download = new URL(made.body.values.doc.url);
      assert.equal((await t.get(download.pathname + download.search, { key: null })).status, 200);
      const tampered = `${download.pathname}${download.search.replace(/signature=[^&]+/, 'signature=forged-signature-0000')}`;
      assert.equal((await t.get(tampered, { key: null })).status, 403);

      const flow = await t.post('/api/flows', { name: 'hook', definition: { trigger: { table: 'notes', events: ['create'] }, webhook: { url: 'https://example.com/hook' } } });
      assert.equal(flow.status, 201, flow.text);
      const secret = flow.body.secret as string;
      assert.ok(typeof secret === 'string' && secret.length > 8);
      const created = await t.post('/api/api-keys', { name: 'second', memberId: t.ownerId });
      assert.equal(created.status, 201, created.text);
      const newKey = created.body.key as string;

      const files = log.requests().filter((l) => l.route === '/files/:tableId/:rowId/:fileId');
      assert.deepEqual(files.map((l) => [l.method, l.status]), [['PUT', 200], ['GET', 200], ['GET', 403]]);
      for (const s of [upload.searchParams.get('signature'), download.searchParams.get('signature'), 'forged-signature', 'signature=', 'expires=', secret, newKey, TEST_KEY]) {
        assert.ok(s && !log.text.includes(s), `${s} is not in the log`);
      }
    });

    it('a request the client abandons is logged as aborted', async () => {
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = t.app.server.address() as AddressInfo;
      const { nextCursor } = (await t.get('/api/tables/notes/changes')).body;
      log.clear();
      const req = http.get({ host: '127.0.0.1', port, path: `/api/tables/notes/changes?wait=10&after=${nextCursor}`, headers: { 'x-api-key': TEST_KEY } });
      req.on('error', () => {});
      await sleep(300);
      req.destroy();
      for (let i = 0; i < 200 && log.requests().length === 0; i++) await sleep(25);
      await sleep(300);
      assert.equal(log.requests().length, 1, `one line for the request:\n${log.text}`);
      const [line] = log.requests();
      assert.equal(line.msg, 'request aborted');
      assert.equal(line.aborted, true);
      assert.equal(line.route, '/api/tables/:table/changes');
      assert.equal(line.status, null);
      assert.equal(line.keyId, keyId);
    });
  });

  it('ROWHOUSE_LOG_LEVEL=warn writes no line for requests', async () => {
    const log = new Captured();
    const t = await startApp(kind, { ROWHOUSE_LOG_LEVEL: 'warn' }, { logStream: log as unknown as NodeJS.WritableStream });
    try {
      assert.equal((await t.post('/api/tables', { code: 'quiet', name: 'Quiet', fields: [] })).status, 201);
      assert.equal((await t.get('/api/tables/quiet/rows')).status, 200);
      assert.equal((await t.get('/api/tables/quiet/rows', { key: null })).status, 401);
      assert.equal((await t.get('/api/nope')).status, 404);
      assert.equal((await t.get('/api/tables/quiet/rows', { query: { pageSize: '0' } })).status, 400);
      assert.equal(log.text, '');
    } finally {
      await t.close();
    }
  });
});
