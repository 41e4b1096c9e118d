import assert from 'node:assert/strict';
import { spawnSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { TEST_KEY, type TestApp, eachDatabase, startApp } from '../support/harness.ts';
import { within } from '../support/wire.ts';

/**
 * Limits on the wire, against a real listening server and real clients (issue 17, items 1, 2, 6):
 * a body over its limit is answered 413 and the client that writes it whole before reading still
 * reads that answer (the rest is read and dropped, within a bound); a URL over 16 KiB is answered
 * 431 in the one error format with Connection: close; a body that stops arriving fails with 408.
 */

const MiB = 1024 * 1024;
const BIG = 17 * MiB;
/** The upload and import limit here: a 17 MiB file is over it, and within what the server drains after answering. */
const FILE_LIMIT = 4 * MiB;
const HAS_PYTHON = spawnSync('python3', ['--version']).status === 0;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/**
 * Node's http client writing the whole body first: all of it handed to the request at once (one
 * buffer with Content-Length, or 1 MiB chunks), and only an answer read in full *and* a body
 * written in full, with no error on the way, count. A server that closes with the body unread
 * makes the write fail (EPIPE, ECONNRESET), often before the answer is read.
 */
function nodeClient(port: number, method: string, target: string, headers: Record<string, string>, bytes: number, chunked: boolean): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const agent = new http.Agent({ keepAlive: false });
    let answer: Answer | null = null;
    let written = false;
    const settle = () => {
      if (answer && written) {
        agent.destroy();
        resolve(answer);
      }
    };
    const req = http.request(
      { host: '127.0.0.1', port, method, path: target, agent, headers: { ...headers, ...(chunked ? {} : { 'content-length': String(bytes) }) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => {
          try {
            answer = { status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(text) };
          } catch (err) {
            reject(err);
          }
          settle();
        });
      },
    );
    req.on('error', (err) => {
      agent.destroy();
      reject(err);
    });
    req.on('finish', () => {
      written = true;
      settle();
    });
    if (chunked) {
      const piece = Buffer.alloc(MiB, 'x');
      for (let left = bytes; left > 0; left -= MiB) req.write(left >= MiB ? piece : piece.subarray(0, left));
      req.end();
    } else {
      req.end(Buffer.alloc(bytes, 'x'));
    }
  });
}

interface RawResult {
  /** Everything the server sent. */
  text: string;
  /** Whether every byte given to the socket was accepted before anything went wrong. */
  written: boolean;
  /** A socket error (EPIPE, ECONNRESET), or null. */
  error: string | null;
  /** Whether the server ended the connection in order (FIN, not a reset). */
  ended: boolean;
}

/** A raw socket: writes the request head and the whole body at once, then reads whatever comes until the connection closes. */
function rawExchange(port: number, chunks: (string | Buffer)[], options: { endAfterWrite?: boolean } = {}): Promise<RawResult> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const got: Buffer[] = [];
    const result: RawResult = { text: '', written: false, error: null, ended: false };
    socket.on('data', (d) => got.push(d));
    socket.on('error', (err: NodeJS.ErrnoException) => (result.error ??= err.code ?? err.message));
    socket.on('end', () => (result.ended = true));
    socket.on('close', () => resolve({ ...result, text: Buffer.concat(got).toString('utf8') }));
    for (const c of chunks) socket.write(c);
    const done = (err?: Error | null) => {
      if (err) result.error ??= (err as NodeJS.ErrnoException).code ?? err.message;
      else if (result.error === null) result.written = true;
    };
    if (options.endAfterWrite === false) socket.write('', done);
    else socket.end(done);
  });
}

function head(method: string, target: string, headers: Record<string, string>): string {
  return `${method} ${target} HTTP/1.1\r\nhost: 127.0.0.1\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
}

/** A chunked body of `bytes` bytes in 1 MiB chunks, ended. */
function chunkedBody(bytes: number): (string | Buffer)[] {
  const piece = Buffer.alloc(MiB, 'x');
  const out: (string | Buffer)[] = [];
  for (let left = bytes; left > 0; left -= MiB) {
    const n = Math.min(left, MiB);
    out.push(`${n.toString(16)}\r\n`, n === MiB ? piece : piece.subarray(0, n), '\r\n');
  }
  out.push('0\r\n\r\n');
  return out;
}

/** The answers in a raw exchange: status line, headers and JSON body of each. */
function answers(text: string): { status: number; headers: Record<string, string>; body: any }[] {
  const out = [];
  let rest = text;
  while (rest.startsWith('HTTP/1.1 ')) {
    const end = rest.indexOf('\r\n\r\n');
    const lines = rest.slice(0, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const l of lines.slice(1)) headers[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
    const length = Number(headers['content-length']);
    const bodyText = rest.slice(end + 4, end + 4 + length);
    out.push({ status: Number(lines[0].split(' ')[1]), headers, body: JSON.parse(bodyText) });
    rest = rest.slice(end + 4 + length);
  }
  assert.equal(rest, '', 'nothing but whole answers');
  return out;
}

function assertErrorBody(body: any, status: number, message?: RegExp): void {
  assert.equal(body.statusCode, status);
  assert.equal(typeof body.error, 'string');
  assert.equal(typeof body.message, 'string');
  if (message) assert.match(body.message, message);
}

eachDatabase('limits on the wire', (kind) => {
  let t: TestApp;
  let port: number;

  before(async () => {
    t = await startApp(kind, { ROWHOUSE_MAX_FILE_BYTES: String(FILE_LIMIT), ROWHOUSE_BODY_TIMEOUT_SECONDS: '2' });
    const made = await t.post('/api/tables', { code: 'docs', name: 'Docs', fields: [{ code: 'title', type: 'text' }, { code: 'file', type: 'file' }] });
    assert.equal(made.status, 201, made.text);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as net.AddressInfo).port;
  });
  after(() => t.close());

  const json = { 'x-api-key': TEST_KEY, 'content-type': 'application/json' };
  const importPath = '/api/tables/docs/rows-import?format=csv&encoding=utf8';
  const csv = { 'x-api-key': TEST_KEY, 'content-type': 'text/csv' };

  /** A fresh upload URL (path and query) for a row of docs. */
  async function uploadPath(rowId = 'r1'): Promise<{ id: string; target: string }> {
    const issued = await t.post(`/api/tables/docs/rows/${rowId}/file-upload-url`, { count: 1 });
    assert.equal(issued.status, 200, issued.text);
    const u = new URL(issued.body.data[0].url);
    return { id: issued.body.data[0].id, target: u.pathname + u.search };
  }

  const partials = () => {
    const dir = path.join(t.scratch.dir, 'files', '.partial');
    return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
  };

  describe('a body over its limit: the client that writes it whole still reads the 413', () => {
    for (const chunked of [false, true]) {
      const how = chunked ? 'chunked' : 'with Content-Length';

      it(`Node's http client, a JSON route, 17 MiB ${how}`, async () => {
        const r = await within(60_000, 'the 413', nodeClient(port, 'POST', '/api/flows', json, BIG, chunked));
        assert.equal(r.status, 413);
        assertErrorBody(r.body, 413);
        assert.equal(r.headers.connection, 'close');
        assert.ok(r.headers['x-request-id']);
      });

      it(`a raw socket, a JSON route, 17 MiB ${how}: every byte accepted, the 413, then an orderly close`, async () => {
        const body = chunked ? chunkedBody(BIG) : [Buffer.alloc(BIG, 'x')];
        const r = await within(60_000, 'the exchange', rawExchange(port, [head('POST', '/api/flows', chunked ? { ...json, 'transfer-encoding': 'chunked' } : { ...json, 'content-length': String(BIG) }), ...body]));
        assert.equal(r.error, null, `the connection failed (${r.error}) after ${r.text.length} bytes of answer`);
        assert.ok(r.written, 'the whole body was written');
        assert.ok(r.ended, 'the server ended the connection in order');
        const [a, ...more] = answers(r.text);
        assert.equal(more.length, 0);
        assert.equal(a.status, 413);
        assert.equal(a.headers.connection, 'close');
        assertErrorBody(a.body, 413);
      });

      it(`Node's http client, rows-import, 17 MiB ${how} over ROWHOUSE_MAX_FILE_BYTES`, async () => {
        const r = await within(60_000, 'the 413', nodeClient(port, 'POST', importPath, csv, BIG, chunked));
        assert.equal(r.status, 413);
        assertErrorBody(r.body, 413, /ROWHOUSE_MAX_FILE_BYTES/);
        assert.equal(r.headers.connection, 'close');
      });

      it(`a raw socket, rows-import, 17 MiB ${how}`, async () => {
        const body = chunked ? chunkedBody(BIG) : [Buffer.alloc(BIG, 'x')];
        const r = await within(60_000, 'the exchange', rawExchange(port, [head('POST', importPath, chunked ? { ...csv, 'transfer-encoding': 'chunked' } : { ...csv, 'content-length': String(BIG) }), ...body]));
        assert.equal(r.error, null, `the connection failed (${r.error})`);
        assert.ok(r.written && r.ended);
        const [a] = answers(r.text);
        assert.equal(a.status, 413);
        assertErrorBody(a.body, 413, /ROWHOUSE_MAX_FILE_BYTES/);
      });

      it(`Node's http client, an upload URL, 17 MiB ${how}: 413, nothing kept, the URL still usable`, async () => {
        const { id, target } = await uploadPath();
        const r = await within(60_000, 'the 413', nodeClient(port, 'PUT', target, { 'content-type': 'application/octet-stream' }, BIG, chunked));
        assert.equal(r.status, 413);
        assertErrorBody(r.body, 413, /ROWHOUSE_MAX_FILE_BYTES/);
        assert.deepEqual(partials(), []);
        const put = await t.request('PUT', target, { raw: 'small', headers: { 'content-type': 'text/plain' }, key: null });
        assert.equal(put.status, 200, put.text);
        assert.deepEqual(put.body, { id, size: 5 });
      });

      it(`a raw socket, an upload URL, 17 MiB ${how}`, async () => {
        const { target } = await uploadPath();
        const type = { 'content-type': 'application/octet-stream' };
        const body = chunked ? chunkedBody(BIG) : [Buffer.alloc(BIG, 'x')];
        const r = await within(60_000, 'the exchange', rawExchange(port, [head('PUT', target, chunked ? { ...type, 'transfer-encoding': 'chunked' } : { ...type, 'content-length': String(BIG) }), ...body]));
        assert.equal(r.error, null, `the connection failed (${r.error})`);
        assert.ok(r.written && r.ended);
        const [a] = answers(r.text);
        assert.equal(a.status, 413);
        assert.equal(a.headers.connection, 'close');
      });
    }

    it('Python http.client, a JSON route: reads the 413', { skip: !HAS_PYTHON && 'no python3' }, async () => {
      const script = [
        'import http.client, json, sys',
        `c = http.client.HTTPConnection("127.0.0.1", ${port}, timeout=60)`,
        `c.request("POST", "/api/flows", body=b"x" * ${BIG}, headers={"x-api-key": "${TEST_KEY}", "content-type": "application/json"})`,
        'r = c.getresponse()',
        'print(json.dumps({"status": r.status, "connection": r.getheader("connection"), "body": json.loads(r.read())}))',
      ].join('\n');
      const child = spawn('python3', ['-c', script], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (err += d));
      const code = await within(60_000, 'python', new Promise<number | null>((resolve) => child.on('close', resolve)));
      assert.equal(code, 0, err);
      const r = JSON.parse(out);
      assert.equal(r.status, 413);
      assert.equal(r.connection, 'close');
      assertErrorBody(r.body, 413);
    });

    it('a small rest of a declared body is read after the answer, and the connection serves the next request', async () => {
      // 401 before the body is read; 30 000 bytes declared, 1 000 sent first, the rest after the answer.
      const socket = net.connect(port, '127.0.0.1');
      const got: Buffer[] = [];
      socket.on('data', (d) => got.push(d));
      const errors: string[] = [];
      socket.on('error', (e: NodeJS.ErrnoException) => errors.push(e.code ?? e.message));
      socket.write(head('POST', '/api/flows', { 'content-type': 'application/json', 'content-length': '30000' }) + ' '.repeat(1000));
      const untilAnswers = async (n: number) => {
        for (let i = 0; i < 400 && Buffer.concat(got).toString().split('HTTP/1.1 ').length - 1 < n; i++) await sleep(25);
      };
      await within(10_000, 'the 401', untilAnswers(1));
      await sleep(50);
      socket.write(' '.repeat(29_000));
      socket.write(head('GET', '/healthz', {}));
      await within(10_000, 'the second answer', untilAnswers(2));
      socket.destroy();
      const [first, second] = answers(Buffer.concat(got).toString('utf8'));
      assert.equal(first.status, 401);
      assert.notEqual(first.headers.connection, 'close');
      assert.equal(second.status, 200);
      assert.deepEqual(second.body, { status: 'ok' });
      assert.deepEqual(errors, []);
    });

    it('what is drained is bounded: a client that goes on writing long past the limit is cut off', async () => {
      // 100 MiB over a 16 MiB limit: the server drains at most 64 MiB of it after the 413.
      const total = 100 * MiB;
      const serverSide = new Promise<net.Socket>((resolve) => t.app.server.once('connection', resolve));
      const r = await within(120_000, 'the exchange', rawExchange(port, [head('POST', '/api/flows', { ...json, 'transfer-encoding': 'chunked' }), ...chunkedBody(total)]));
      assert.ok(!r.written, 'the server stopped reading before the client could write all of it');
      assert.match(r.text, /^HTTP\/1\.1 413 /, 'the 413 came first');
      const read = (await serverSide).bytesRead;
      assert.ok(read > 64 * MiB && read < total, `the server read ${read} bytes: past the limit and the drain bound, not all`);
    });
  });

  describe('a URL over 16 KiB', () => {
    it('answers 431 in the error format with Connection: close, then closes in order: a second request on it gets no answer', async () => {
      const long = `/api/tables/docs/rows?filter=${encodeURIComponent(JSON.stringify({ values: { title: { _eq: 'x'.repeat(20_000) } } }))}`;
      const r = await within(10_000, 'the 431', rawExchange(port, [head('GET', long, { 'x-api-key': TEST_KEY }), head('GET', '/healthz', {})], { endAfterWrite: false }));
      assert.equal(r.error, null, `the connection was reset (${r.error})`);
      assert.ok(r.ended);
      const all = answers(r.text);
      assert.equal(all.length, 1, 'one answer: the connection cannot serve another request');
      const [a] = all;
      assert.equal(a.status, 431);
      assert.equal(a.headers.connection, 'close');
      assert.match(a.headers['content-type'], /^application\/json/);
      assert.ok(a.headers['x-request-id']);
      assertErrorBody(a.body, 431, /16 KiB/);
      assert.equal(a.body.error, 'Request Header Fields Too Large');
    });

    it("a keep-alive client (Node's agent) hears Connection: close, and its next request goes on a new connection", async () => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const get = (target: string) =>
          new Promise<Answer>((resolve, reject) => {
            http
              .get({ host: '127.0.0.1', port, path: target, agent, headers: { 'x-api-key': TEST_KEY } }, (res) => {
                let text = '';
                res.on('data', (d) => (text += d));
                res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(text) }));
              })
              .on('error', reject);
          });
        assert.equal((await get('/api/tables/docs/rows')).status, 200);
        const refused = await get(`/api/tables/docs/rows?x=${'y'.repeat(17 * 1024)}`);
        assert.equal(refused.status, 431);
        assert.equal(refused.headers.connection, 'close');
        for (let i = 0; i < 3; i++) assert.equal((await get('/api/tables/docs/rows')).status, 200);
      } finally {
        agent.destroy();
      }
    });
  });

  describe('a body that stops arriving (ROWHOUSE_BODY_TIMEOUT_SECONDS=2)', () => {
    /** Sends the head and the first bytes, then nothing: what comes back, and when the server closed. */
    function stalled(method: string, target: string, headers: Record<string, string>, first: string | Buffer) {
      return within(30_000, 'the 408', rawExchange(port, [head(method, target, headers), first], { endAfterWrite: false }));
    }

    it('a JSON body: 408 in the error format, and the connection closed', async () => {
      const r = await stalled('POST', '/api/flows', { ...json, 'content-length': '1000' }, '{"name": "never fin');
      const [a] = answers(r.text);
      assert.equal(a.status, 408);
      assert.equal(a.headers.connection, 'close');
      assertErrorBody(a.body, 408, /stopped arriving/);
      assert.ok(r.ended);
      const flows = await t.get('/api/flows');
      assert.equal(flows.body.data.length, 0);
    });

    it('a chunked JSON body: 408', async () => {
      const r = await stalled('POST', '/api/flows', { ...json, 'transfer-encoding': 'chunked' }, '5\r\n{"nam\r\n');
      assert.equal(answers(r.text)[0].status, 408);
    });

    it('an upload: 408, its temp file removed, and the upload URL still usable', async () => {
      const { id, target } = await uploadPath('r-stall');
      const r = await stalled('PUT', target, { 'content-type': 'application/pdf', 'content-length': String(MiB) }, Buffer.alloc(200_000, 'x'));
      const [a] = answers(r.text);
      assert.equal(a.status, 408);
      assertErrorBody(a.body, 408, /stopped arriving/);
      assert.deepEqual(partials(), [], 'no temp file is left');
      // Nothing was recorded: attaching it is refused, and a whole upload to the same URL works.
      const attach = await t.post('/api/tables/docs/rows', { id: 'r-stall', values: { file: { id, name: 'a.pdf' } } });
      assert.equal(attach.status, 400, attach.text);
      const put = await t.request('PUT', target, { raw: 'whole', headers: { 'content-type': 'application/pdf' }, key: null });
      assert.equal(put.status, 200, put.text);
    });

    it('an import: 408 and no row imported', async () => {
      const r = await stalled('POST', importPath, { ...csv, 'content-length': String(MiB) }, 'id,title\nrow-1,first\nrow-2,second\n');
      assert.equal(answers(r.text)[0].status, 408);
      const rows = await t.get('/api/tables/docs/rows');
      assert.deepEqual(rows.body.data, []);
    });

    it('a body that arrives slowly but steadily is not cut off', async () => {
      const body = JSON.stringify({ name: 'slow', description: 'z'.repeat(900) });
      const socket = net.connect(port, '127.0.0.1');
      let text = '';
      socket.on('data', (d) => (text += d));
      socket.write(head('POST', '/api/flows', { ...json, 'content-length': String(Buffer.byteLength(body)) }));
      // 10 pieces, one every 400 ms: 4 s in all, twice the timeout, never 2 s without a byte.
      for (let i = 0; i < 10; i++) {
        socket.write(body.slice(i * 100, (i + 1) * 100 + (i === 9 ? body.length : 0)));
        await sleep(400);
      }
      for (let i = 0; i < 400 && !text.includes('\r\n\r\n{'); i++) await sleep(25);
      socket.destroy();
      assert.match(text, /^HTTP\/1\.1 201 /, text.slice(0, 300));
    });
  });
});
