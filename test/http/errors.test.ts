import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { type Reply, type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';

/** The error body has exactly the documented keys (details only where validation adds it). */
function expectPlainError(reply: Reply, status: number): Record<string, unknown> {
  const body = expectError(reply, status);
  assert.deepEqual(Object.keys(body).filter((k) => k !== 'details').sort(), ['error', 'message', 'statusCode']);
  assert.match(String(reply.headers['content-type']), /^application\/json/);
  return body;
}

function expectRequestId(reply: Reply): string {
  const id = reply.headers['x-request-id'];
  assert.equal(typeof id, 'string', `no x-request-id on a ${reply.status}`);
  assert.ok((id as string).length > 0);
  return id as string;
}

eachDatabase('the error format (CONTRACT §3)', (kind) => {
  describe('on a healthy app', () => {
    let t: TestApp;
    before(async () => {
      t = await startApp(kind);
    });
    after(() => t.close());

    it('answers an unknown route with 404 naming it', async () => {
      for (const [method, url] of [['GET', '/nope'], ['POST', '/no/such/route?x=1'], ['DELETE', '/']] as const) {
        const body = expectPlainError(await t.request(method, url, { key: null }), 404);
        assert.equal(body.error, 'Not Found');
        assert.ok(String(body.message).includes(url.split('?')[0]), String(body.message));
      }
      // An unknown /api route, with a valid key.
      const body = expectPlainError(await t.get('/api/no-such-resource'), 404);
      assert.match(String(body.message), /no-such-resource/);
      // A method a known path does not take.
      expectPlainError(await t.request('PATCH', '/api/flows', { body: {} }), 404);
    });

    it('answers malformed or empty JSON with 400', async () => {
      for (const raw of ['{"name": ', '{name: "x"}', 'nul', '{"a":1}}']) {
        const body = expectPlainError(await t.request('POST', '/api/flows', { raw, headers: { 'content-type': 'application/json' } }), 400);
        assert.equal(body.error, 'Bad Request');
        assert.match(String(body.message), /JSON/);
      }
      expectPlainError(await t.request('POST', '/api/flows', { raw: '', headers: { 'content-type': 'application/json' } }), 400);
      expectPlainError(await t.request('PUT', '/api/flows/x', { raw: '[', headers: { 'content-type': 'application/json; charset=utf-8' } }), 400);
      assert.equal((await t.get('/api/flows')).body.data.length, 0, 'nothing was created');
    });

    it('answers a body that is not valid JSON with 400 naming the line and column, and writes nothing', async () => {
      const table = await t.post('/api/tables', { name: 'Parsed', code: 'parsed', fields: [{ code: 'title', type: 'text' }, { code: 'qty', type: 'number' }] });
      assert.equal(table.status, 201, table.text);
      const json = { 'content-type': 'application/json' };
      const send = (url: string, raw: string) => t.request('POST', url, { raw, headers: json });

      // On line 1.
      const one = expectPlainError(await send('/api/tables/parsed/rows', '{"values": {"title": "a", "qty": 1,}}'), 400);
      assert.equal(one.error, 'Bad Request');
      assert.equal(one.message, 'The body is not valid JSON: Expected double-quoted property name at line 1, column 36');

      // On line 3 of a body laid out over lines (CRLF line ends count as one).
      const lines = ['{', '  "values": {"title": "b"},', '  "id": "r-1" "options": {}', '}'];
      for (const end of ['\n', '\r\n']) {
        const three = expectPlainError(await send('/api/tables/parsed/rows', lines.join(end)), 400);
        assert.equal(three.message, "The body is not valid JSON: Expected ',' or '}' after property value at line 3, column 15");
      }
      // A token JSON never has, and a body that ends too early, in a bulk request.
      const bulk = ['{"data": [', '  {"values": {"title": "c"}},', '  {"values": {"title": \'d\'}}', ']}'].join('\n');
      assert.equal(expectPlainError(await send('/api/tables/parsed/rows-bulk', bulk), 400).message, "The body is not valid JSON: Unexpected token ''' at line 3, column 24");
      const cut = expectPlainError(await send('/api/tables/parsed/rows-bulk', '{"data": [\n  {"values": {"title": "e"}},\n'), 400);
      assert.equal(cut.message, 'The body is not valid JSON: Unexpected end of input at line 3, column 1');

      const rows = await t.get('/api/tables/parsed/rows');
      assert.equal(rows.status, 200, rows.text);
      assert.deepEqual(rows.body.data, [], 'nothing was written');

      // What stays as it was: a byte order mark is skipped, and a prototype key is refused (a 400, nothing written).
      assert.equal((await send('/api/tables/parsed/rows', '\ufeff{"id": "bom", "values": {"title": "f"}}')).status, 201);
      const proto = expectPlainError(await send('/api/tables/parsed/rows', '{"values": {"title": "g"}, "__proto__": {"x": 1}}'), 400);
      assert.match(String(proto.message), /JSON/);
      assert.deepEqual((await t.get('/api/tables/parsed/rows')).body.data.map((r: { id: string }) => r.id), ['bom']);
    });

    it('answers a body that is not JSON with 415 naming the expected type', async () => {
      const cases: [string, string][] = [
        ['text/plain', '{"name":"x"}'],
        ['text/plain; charset=utf-8', 'name'],
        ['application/x-www-form-urlencoded', 'name=x'],
        ['multipart/form-data; boundary=zzz', '--zzz\r\n\r\nx\r\n--zzz--'],
        ['application/xml', '<flow/>'],
      ];
      for (const [type, raw] of cases) {
        const body = expectPlainError(await t.request('POST', '/api/flows', { raw, headers: { 'content-type': type } }), 415);
        assert.equal(body.error, 'Unsupported Media Type');
        assert.match(String(body.message), /application\/json/);
      }
      // A body without any content type is not JSON either.
      expectPlainError(await t.request('POST', '/api/flows', { raw: '{"name":"x"}' }), 415);
      assert.equal((await t.get('/api/flows')).body.data.length, 0, 'nothing was created');
      // JSON with a charset parameter is JSON.
      const ok = await t.request('POST', '/api/flows', { raw: '{"name":"x"}', headers: { 'content-type': 'application/json; charset=utf-8' } });
      assert.equal(ok.status, 201, ok.text);
    });

    it('puts an x-request-id on every response, success or error', async () => {
      const replies = [
        await t.get('/healthz', { key: null }),
        await t.get('/api/flows'),
        await t.get('/api/flows', { key: null }),
        await t.get('/nope'),
        await t.request('POST', '/api/flows', { raw: '{', headers: { 'content-type': 'application/json' } }),
        await t.request('POST', '/api/flows', { raw: 'x', headers: { 'content-type': 'text/plain' } }),
      ];
      const ids = replies.map(expectRequestId);
      assert.equal(new Set(ids).size, ids.length, 'each request has its own id');
    });

    it(
      'answers a malformed URL in the error format, with a request id',
      async () => {
        const r = await t.get('/api/flows/%', { key: null });
        expectPlainError(r, 400);
        expectRequestId(r);
      },
    );

    it('names a malformed URL by its path only: its query may hold a signed URL\'s signature, and the message is logged (issue 17)', async () => {
      const body = expectPlainError(await t.get('/files/a/b/%ZZ?expires=1&signature=SECRET-SIGNATURE', { key: null }), 400);
      assert.equal(body.message, 'The URL /files/a/b/%ZZ is not valid: check its percent-encoding');
    });

    it('echoes a request id the client sends', async () => {
      const r = await t.get('/api/flows', { headers: { 'x-request-id': 'client-trace-42' } });
      assert.equal(r.headers['x-request-id'], 'client-trace-42');
    });
  });

  describe('with a small body limit', () => {
    let t: TestApp;
    before(async () => {
      t = await startApp(kind, { ROWHOUSE_MAX_BODY_BYTES: '2048' });
    });
    after(() => t.close());

    it('answers a body over ROWHOUSE_MAX_BODY_BYTES with 413', async () => {
      const small = await t.post('/api/flows', { name: 'small', description: 'd'.repeat(1500) });
      assert.equal(small.status, 201, small.text);
      const r = await t.post('/api/flows', { name: 'big', description: 'd'.repeat(3000) });
      const body = expectPlainError(r, 413);
      assert.equal(body.error, 'Payload Too Large');
      expectRequestId(r);
      const names = (await t.get('/api/flows')).body.data.map((f: { name: string }) => f.name);
      assert.deepEqual(names, ['small']);
    });
  });

  describe('on faults', () => {
    let t: TestApp;
    before(async () => {
      t = await startApp(kind);
    });
    after(() => t.close());

    it('answers an internal fault with a 500 that shows no stack trace and no SQL', async () => {
      assert.equal((await t.post('/api/flows', { name: 'before' })).status, 201);
      await sql`drop table rh_flows`.execute(t.database.db);
      for (const r of [await t.get('/api/flows'), await t.post('/api/flows', { name: 'after' })]) {
        const body = expectPlainError(r, 500);
        assert.equal(body.error, 'Internal Server Error');
        const id = expectRequestId(r);
        assert.ok(String(body.message).includes(id), 'the message gives the request id to quote');
        for (const leak of [/rh_flows/i, /select|insert|from\s/i, /no such table|relation|does not exist/i, /\bat\s+\S+\s*\(/, /\.ts:\d+/, /sqlite|postgres/i, /stack/i]) {
          assert.doesNotMatch(r.text, leak);
        }
      }
      // The service still answers everything else.
      assert.equal((await t.get('/api/environment-variables')).status, 200);
    });

    it('keeps /healthz up but answers /readyz 503 once the database is unreachable', async () => {
      const ready = await t.get('/readyz', { key: null });
      assert.equal(ready.status, 200, ready.text);
      assert.deepEqual(ready.body, { status: 'ok' });

      await t.database.close();
      const r = await t.get('/readyz', { key: null });
      const body = expectPlainError(r, 503);
      assert.equal(body.error, 'Service Unavailable');
      assert.match(String(body.message), /database/i);
      expectRequestId(r);
      const health = await t.get('/healthz', { key: null });
      assert.equal(health.status, 200);
      assert.deepEqual(health.body, { status: 'ok' });
    });
  });
});
