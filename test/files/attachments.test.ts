import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse as parseDisposition } from 'content-disposition';
import { signedPath } from '../../src/files/signed-urls.ts';
import { type TestApp, eachDatabase, expectError, startApp, uploadFile } from '../support/harness.ts';
import { type ListeningApp, startListening } from '../support/listening.ts';
// @ts-expect-error: a plain JavaScript module of the test setup, without type declarations
import { startS3Server } from '../support/s3-server.mjs';

/**
 * File attachments (the seed spec's "File attachment", CONTRACT §8) on local storage, through a
 * real listening server and a real HTTP client: upload URLs, uploads, attaching in single, bulk
 * and batch writes, signed downloads, and the bytes' deletion once a committed change lets go.
 */

const SECRET = 'files-test-secret-0123456789';
const MAX_BYTES = 64 * 1024;

eachDatabase('files: three-step upload on local storage', (kind) => {
  let t: ListeningApp;
  let base: string;

  before(async () => {
    t = await startListening(kind, { ROWHOUSE_SECRET: SECRET, ROWHOUSE_MAX_FILE_BYTES: String(MAX_BYTES), ROWHOUSE_UPLOAD_TTL_SECONDS: '60' });
    base = t.base;
    for (const code of ['docs', 'other']) {
      const made = await t.post('/api/tables', {
        code,
        name: code,
        fields: [{ code: 'title', type: 'text' }, { code: 'doc', type: 'file' }, { code: 'photo', type: 'file' }],
      });
      assert.equal(made.status, 201, made.text);
    }
  });
  after(() => t.close());

  /** The service's URLs name its public URL; the test server listens elsewhere. */
  const local = (url: string) => {
    const u = new URL(url);
    assert.equal(u.origin, 'http://rowhouse.test');
    return base + u.pathname + u.search;
  };
  const storageDir = () => path.join(t.scratch.dir, 'files');
  /** Every object local storage holds (its own scratch entries left out). */
  const objects = (): string[] => {
    if (!fs.existsSync(storageDir())) return [];
    return (fs.readdirSync(storageDir(), { recursive: true, withFileTypes: true }) as fs.Dirent[])
      .filter((e) => e.isFile() && !path.join(e.parentPath, e.name).includes('.partial'))
      .map((e) => path.relative(storageDir(), path.join(e.parentPath, e.name)));
  };

  async function uploadUrls(table: string, rowId: string, count: number): Promise<{ id: string; url: string }[]> {
    const r = await t.post(`/api/tables/${table}/rows/${rowId}/file-upload-url`, { count });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.length, count);
    return r.body.data;
  }
  const put = (url: string, body: Buffer | string, type: string | null = 'application/pdf') =>
    fetch(local(url), { method: 'PUT', body, headers: type === null ? {} : { 'content-type': type } });
  async function uploaded(table: string, rowId: string, bytes: Buffer, type = 'application/pdf'): Promise<string> {
    const [{ id, url }] = await uploadUrls(table, rowId, 1);
    const r = await put(url, bytes, type);
    assert.equal(r.status, 200, await r.text());
    return id;
  }
  async function errorOf(res: Response, status: number): Promise<Record<string, unknown>> {
    const text = await res.text();
    assert.equal(res.status, status, text);
    const body = JSON.parse(text);
    assert.equal(body.statusCode, status);
    assert.equal(typeof body.error, 'string');
    assert.equal(typeof body.message, 'string');
    return body;
  }

  it('uploads, attaches on create, and serves the same bytes with their type and name', async () => {
    const bytes = randomBytes(40_000);
    const id = await uploaded('docs', 'r1', bytes);
    const created = await t.post('/api/tables/docs/rows', { id: 'r1', values: { title: 'one', doc: { id, name: '報告書 v1.pdf' } } });
    assert.equal(created.status, 201, created.text);
    const doc = created.body.values.doc;
    assert.deepEqual(Object.keys(doc).sort(), ['expiresAt', 'id', 'mimeType', 'name', 'size', 'url']);
    assert.equal(doc.id, id);
    assert.equal(doc.name, '報告書 v1.pdf');
    assert.equal(doc.mimeType, 'application/pdf');
    assert.equal(doc.size, bytes.length);
    const expires = Date.parse(doc.expiresAt) - Date.now();
    assert.ok(expires > 3500_000 && expires <= 3600_000, `expires in ${expires} ms`);

    const res = await fetch(local(doc.url));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/pdf');
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(parseDisposition(res.headers.get('content-disposition') as string).parameters.filename, '報告書 v1.pdf');
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), bytes);

    // Every read carries a working URL: get, list.
    const got = await t.get('/api/tables/docs/rows/r1');
    assert.equal((await fetch(local(got.body.values.doc.url))).status, 200);
    const listed = await t.get('/api/tables/docs/rows');
    assert.equal(listed.body.data[0].values.doc.id, id);
    assert.equal((await fetch(local(listed.body.data[0].values.doc.url))).status, 200);
  });

  it('refuses altered and expired URLs with a 403, and uploads without a Content-Type or past the limit', async () => {
    const [{ id, url }] = await uploadUrls('docs', 'r2', 1);
    const u = new URL(url);
    const sig = u.searchParams.get('signature') as string;
    const altered = new URL(url);
    altered.searchParams.set('signature', (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1));
    await errorOf(await put(altered.toString(), 'x'), 403);
    await errorOf(await put(url.replace(`/${id}?`, `/${id.replace(/.$/, (c) => (c === '0' ? '1' : '0'))}?`), 'x'), 403);
    await errorOf(await put(url.replace('/r2/', '/r3/'), 'x'), 403);
    const later = new URL(url);
    later.searchParams.set('expires', String(Number(u.searchParams.get('expires')) + 60));
    await errorOf(await put(later.toString(), 'x'), 403);
    const table = (await t.get('/api/tables/docs')).body.id;
    const expired = 'http://rowhouse.test' + signedPath(SECRET, 'upload', { tableId: table, rowId: 'r2', fileId: id }, Math.floor(Date.now() / 1000) - 1);
    assert.match((await errorOf(await put(expired, 'x'), 403)).message as string, /expired/);
    // A download URL's signature does not admit an upload.
    const asDownload = 'http://rowhouse.test' + signedPath(SECRET, 'download', { tableId: table, rowId: 'r2', fileId: id, name: '' }, Math.floor(Date.now() / 1000) + 60);
    await errorOf(await put(asDownload.replace('name=&', ''), 'x'), 403);

    // (fetch labels a string body text/plain; bytes go without a type.)
    await errorOf(await put(url, Buffer.from('x'), null), 400);
    await errorOf(await put(url, randomBytes(MAX_BYTES + 1)), 413);
    assert.deepEqual(objects().filter((o) => o.includes(id)), [], 'nothing kept of a refused upload');
    // Refused uploads leave the file open: a good one then goes through.
    assert.equal((await put(url, randomBytes(MAX_BYTES))).status, 200);
  });

  it('checks file-upload-url bodies', async () => {
    for (const count of [0, 51, '3', 2.5, null]) {
      expectError(await t.post('/api/tables/docs/rows/r1/file-upload-url', { count }), 400);
    }
    expectError(await t.post('/api/tables/docs/rows/r1/file-upload-url', {}), 400);
    expectError(await t.post('/api/tables/docs/rows/r1/file-upload-url', { count: 1, extra: 1 }), 400);
    expectError(await t.post('/api/tables/nope/rows/r1/file-upload-url', { count: 1 }), 404);
    expectError(await t.post('/api/tables/docs/rows/-bad/file-upload-url', { count: 1 }), 400);
    expectError(await t.post('/api/tables/docs/rows/r1/file-upload-url', { count: 1 }, { key: null }), 401);
    assert.equal((await uploadUrls('docs', 'r1', 50)).length, 50);
  });

  it('refuses file values that name no upload of this row, or a bad name, naming the field', async () => {
    const [{ id: notUploaded }] = await uploadUrls('docs', 'r5', 1);
    const otherRow = await uploaded('docs', 'r6', Buffer.from('six'));
    const otherTable = await uploaded('other', 'r5', Buffer.from('other'));
    const good = await uploaded('docs', 'r5', Buffer.from('five'));
    const cases: [unknown, RegExp][] = [
      [{ id: notUploaded, name: 'a.pdf' }, /not been uploaded/],
      [{ id: otherRow, name: 'a.pdf' }, /not issued for this row/],
      [{ id: otherTable, name: 'a.pdf' }, /not issued for this row/],
      [{ id: '00000000-0000-4000-8000-000000000000', name: 'a.pdf' }, /not issued/],
      [{ id: good }, /name/],
      [{ id: good, name: 'x'.repeat(256) }, /name/],
      [{ id: good, name: 'a/b.pdf' }, /name/],
      [{ id: good, name: 'a\\b.pdf' }, /name/],
      [{ id: good, name: 'a\r\nb.pdf' }, /name/],
      [{ id: good, name: 'a\u0000b.pdf' }, /name/],
      [{ id: 'nope', name: 'a.pdf' }, /id/],
    ];
    for (const [doc, why] of cases) {
      const r = await t.post('/api/tables/docs/rows', { id: 'r5', values: { doc } });
      const body = expectError(r, 400);
      assert.match(JSON.stringify(body), /doc/, r.text);
      assert.match(JSON.stringify(body), why, r.text);
    }
    expectError(await t.get('/api/tables/docs/rows/r5'), 404);
    // One file, two fields: refused.
    const both = await t.post('/api/tables/docs/rows', { id: 'r5', values: { doc: { id: good, name: 'a' }, photo: { id: good, name: 'b' } } });
    assert.match(expectError(both, 400).message as string, /belongs to one field/);
    // Then it attaches, once: not to a second row (the same id again is refused as not its row).
    assert.equal((await t.post('/api/tables/docs/rows', { id: 'r5', values: { doc: { id: good, name: 'a.txt' } } })).status, 201);
    const again = await t.post('/api/tables/docs/rows', { id: 'r6', values: { doc: { id: good, name: 'a.txt' } } });
    expectError(again, 400);
    // Writing the same value back is no change.
    const same = await t.patch('/api/tables/docs/rows/r5', { values: { doc: { id: good, name: 'renamed.txt' } } });
    assert.equal(same.status, 200, same.text);
    assert.equal(same.body.values.doc.name, 'renamed.txt');
    assert.equal(same.body.values.doc.size, 4);
  });

  it('refuses a second upload to an attached file with a 409, keeping its bytes', async () => {
    const [{ id, url }] = await uploadUrls('docs', 'r7', 1);
    assert.equal((await put(url, 'first')).status, 200);
    // Before attaching, an upload may be replaced.
    assert.equal((await put(url, 'second', 'text/plain')).status, 200);
    const r = await t.post('/api/tables/docs/rows', { id: 'r7', values: { doc: { id, name: 'a.txt' } } });
    assert.equal(r.body.values.doc.mimeType, 'text/plain');
    await errorOf(await put(url, 'third'), 409);
    assert.equal(await (await fetch(local(r.body.values.doc.url))).text(), 'second');
  });

  it('deletes the bytes a committed change lets go of: replaced, cleared, row deleted', async () => {
    const first = await uploaded('docs', 'r8', Buffer.from('first'));
    const created = await t.post('/api/tables/docs/rows', { id: 'r8', values: { doc: { id: first, name: 'f.txt' } } });
    const firstUrl = local(created.body.values.doc.url);
    const second = await uploaded('docs', 'r8', Buffer.from('second'));
    const replaced = await t.patch('/api/tables/docs/rows/r8', { values: { doc: { id: second, name: 's.txt' } } });
    assert.equal(replaced.status, 200, replaced.text);
    await t.app.files.settled();
    await errorOf(await fetch(firstUrl), 404);
    assert.deepEqual(objects().filter((o) => o.includes(first)), []);
    const secondUrl = local(replaced.body.values.doc.url);
    assert.equal(await (await fetch(secondUrl)).text(), 'second');

    assert.equal((await t.patch('/api/tables/docs/rows/r8', { values: { doc: null } })).status, 200);
    await t.app.files.settled();
    await errorOf(await fetch(secondUrl), 404);
    assert.deepEqual(objects().filter((o) => o.includes(second)), []);

    const third = await uploaded('docs', 'r8', Buffer.from('third'));
    await t.patch('/api/tables/docs/rows/r8', { values: { photo: { id: third, name: 't.txt' } } });
    assert.equal((await t.delete('/api/tables/docs/rows/r8')).status, 204);
    await t.app.files.settled();
    assert.deepEqual(objects().filter((o) => o.includes(third)), []);
  });

  it('attaches in bulk and batch writes, and one bad file reference changes nothing', async () => {
    const a = await uploaded('docs', 'b1', Buffer.from('b1'));
    const b = await uploaded('docs', 'b2', Buffer.from('b2'));
    const stray = await uploaded('docs', 'b9', Buffer.from('b9'));
    const bad = await t.post('/api/tables/docs/rows-bulk', {
      data: [
        { id: 'b1', values: { doc: { id: a, name: 'a' } } },
        { id: 'b2', values: { doc: { id: stray, name: 'b' } } },
      ],
    });
    assert.match(expectError(bad, 400).message as string, /data\[1\]/);
    expectError(await t.get('/api/tables/docs/rows/b1'), 404);
    const good = await t.post('/api/tables/docs/rows-bulk', {
      data: [
        { id: 'b1', values: { doc: { id: a, name: 'a' } } },
        { id: 'b2', values: { doc: { id: b, name: 'b' } } },
      ],
    });
    assert.equal(good.status, 201, good.text);
    assert.equal(await (await fetch(local(good.body.data[1].values.doc.url))).text(), 'b2');

    // A batch that replaces a file and then fails: rolled back, the old file still served.
    const c = await uploaded('docs', 'b1', Buffer.from('c'));
    const failed = await t.post('/api/rows-batch', {
      operations: [
        { type: 'update', tableId: 'docs', id: 'b1', values: { doc: { id: c, name: 'c' } } },
        { type: 'update', tableId: 'docs', id: 'missing', values: { title: 'x' } },
      ],
    });
    expectError(failed, 404);
    await t.app.files.settled();
    const kept = await t.get('/api/tables/docs/rows/b1');
    assert.equal(kept.body.values.doc.id, a);
    assert.equal(await (await fetch(local(kept.body.values.doc.url))).text(), 'b1');
    const batch = await t.post('/api/rows-batch', {
      operations: [{ type: 'update', tableId: 'docs', id: 'b1', values: { doc: { id: c, name: 'c' } } }],
    });
    assert.equal(batch.status, 200, batch.text);
    assert.equal(await (await fetch(local(batch.body.data[0].row.values.doc.url))).text(), 'c');
  });

  it('attaches in batch creates and bulk upserts', async () => {
    const a = await uploaded('docs', 'u1', Buffer.from('u1'));
    const b = await uploaded('docs', 'u2', Buffer.from('u2'));
    const batch = await t.post('/api/rows-batch', {
      operations: [
        { type: 'create', tableId: 'docs', id: 'u1', values: { doc: { id: a, name: 'a' } } },
        { type: 'create', tableId: 'docs', id: 'u2', values: { doc: { id: b, name: 'b' } } },
      ],
    });
    assert.equal(batch.status, 200, batch.text);
    assert.equal(await (await fetch(local(batch.body.data[1].row.values.doc.url))).text(), 'u2');
    const c = await uploaded('docs', 'u1', Buffer.from('c'));
    const upsert = await t.post('/api/tables/docs/rows-bulk', { data: [{ id: 'u1', values: { doc: { id: c, name: 'c' } } }], options: { upsert: true } });
    assert.equal(upsert.status, 200, upsert.text);
    await t.app.files.settled();
    assert.equal(await (await fetch(local(upsert.body.data[0].values.doc.url))).text(), 'c');
    assert.deepEqual(objects().filter((o) => o.includes(a)), [], 'the upsert let go of the file it replaced');
    // A bad file in a batch: the operation's index, nothing written.
    const bad = await t.post('/api/rows-batch', {
      operations: [
        { type: 'update', tableId: 'docs', id: 'u2', values: { title: 'x' } },
        { type: 'create', tableId: 'docs', id: 'u3', values: { doc: { id: a, name: 'a' } } },
      ],
    });
    assert.equal(expectError(bad, 400).index, 1);
    assert.equal((await t.get('/api/tables/docs/rows/u2')).body.values.title, null);
  });

  it('answers 403 to an expired download URL, 404 once the file is gone, and takes uploads past the JSON body limit', async () => {
    const id = await uploaded('docs', 'x1', Buffer.from('x1'));
    const table = (await t.get('/api/tables/docs')).body.id;
    const expired = 'http://rowhouse.test' + signedPath(SECRET, 'download', { tableId: table, rowId: 'x1', fileId: id, name: 'n' }, Math.floor(Date.now() / 1000) - 1);
    await errorOf(await fetch(local(expired)), 403);
    const valid = 'http://rowhouse.test' + signedPath(SECRET, 'download', { tableId: table, rowId: 'x1', fileId: id, name: 'n' }, Math.floor(Date.now() / 1000) + 60);
    await errorOf(await fetch(local(valid)), 404); // not attached: nothing to download
    const renamed = new URL(valid);
    renamed.searchParams.set('name', 'other');
    await errorOf(await fetch(local(renamed.toString())), 403);
    // The JSON body limit (ROWHOUSE_MAX_BODY_BYTES) does not bound uploads.
    const small = await startApp(kind, { ROWHOUSE_MAX_BODY_BYTES: '1024' });
    try {
      assert.equal((await small.post('/api/tables', { code: 'f', name: 'f', fields: [{ code: 'doc', type: 'file' }] })).status, 201);
      await uploadFile(small, 'f', 'r1', randomBytes(200_000));
    } finally {
      await small.close();
    }
  });

  it('exports name, type and size, never a URL', async () => {
    const csv = await t.get('/api/tables/docs/rows-export?format=csv&encoding=utf8&newline=lf');
    assert.equal(csv.status, 200);
    assert.ok(!csv.text.includes('signature'), csv.text);
    assert.match(csv.text, /mimeType/);
    const jsonl = await t.get('/api/tables/docs/rows-export?format=jsonl&encoding=utf8&newline=lf');
    assert.ok(!jsonl.text.includes('signature'));
    assert.ok(!jsonl.text.includes('"url"'));
  });

  describe('the sweeper and deleting tables', () => {
    it('deletes uploads never attached once past the TTL, each once when two instances race, and never an attached one', async () => {
      const twin = await startApp(kind, { ROWHOUSE_SECRET: SECRET, ROWHOUSE_UPLOAD_TTL_SECONDS: '60' }, { sharing: t });
      try {
        const loose: string[] = [];
        for (let i = 0; i < 12; i++) loose.push(await uploaded('docs', `s${i}`, Buffer.from(`s${i}`)));
        const [{ id: neverUploaded }] = await uploadUrls('docs', 's0', 1);
        const keep = await uploaded('docs', 's99', Buffer.from('keep'));
        assert.equal((await t.post('/api/tables/docs/rows', { id: 's99', values: { doc: { id: keep, name: 'k' } } })).status, 201);
        assert.deepEqual(await t.app.files.sweep(), [], 'nothing is past the TTL yet');
        const later = new Date(Date.now() + 61_000);
        const [mine, theirs] = await Promise.all([t.app.files.sweep(later), twin.app.files.sweep(later)]);
        const all = [...mine, ...theirs];
        assert.equal(new Set(all).size, all.length, 'no file deleted twice');
        for (const id of [...loose, neverUploaded]) assert.ok(all.includes(id), `${id} swept`);
        assert.ok(!all.includes(keep));
        for (const id of loose) assert.deepEqual(objects().filter((o) => o.includes(id)), []);
        assert.equal(await (await fetch(local((await t.get('/api/tables/docs/rows/s99')).body.values.doc.url))).text(), 'keep');
      } finally {
        await twin.close();
      }
    });

    it('never deletes a file that is being attached while sweepers run', async () => {
      const twin = await startApp(kind, { ROWHOUSE_SECRET: SECRET, ROWHOUSE_UPLOAD_TTL_SECONDS: '60' }, { sharing: t });
      try {
        const later = new Date(Date.now() + 61_000);
        for (let round = 0; round < 5; round++) {
          const ids: string[] = [];
          for (let i = 0; i < 8; i++) ids.push(await uploaded('docs', `race${round}-${i}`, Buffer.from(`race ${round} ${i}`)));
          const attaches = ids.map((id, i) => t.post('/api/tables/docs/rows', { id: `race${round}-${i}`, values: { doc: { id, name: 'r' } } }));
          const [results, swept1, swept2] = await Promise.all([Promise.all(attaches), t.app.files.sweep(later), twin.app.files.sweep(later)]);
          const swept = [...swept1, ...swept2];
          assert.equal(new Set(swept).size, swept.length, 'no file deleted twice');
          results.forEach((r, i) => {
            if (r.status === 201) assert.ok(!swept.includes(ids[i]), `attached file ${ids[i]} was swept`);
            else {
              assert.equal(r.status, 400, r.text);
              assert.ok(swept.includes(ids[i]), 'refused only because it was swept');
            }
          });
          for (const r of results.filter((x) => x.status === 201)) {
            assert.equal((await fetch(local(r.body.values.doc.url))).status, 200);
          }
        }
      } finally {
        await twin.close();
      }
    });

    it('deletes a table with its files, and a removed file field with its files', async () => {
      const made = await t.post('/api/tables', { code: 'gone', name: 'gone', fields: [{ code: 'f', type: 'file' }, { code: 'g', type: 'file' }] });
      const f = await uploaded('gone', 'g1', Buffer.from('f'));
      const g = await uploaded('gone', 'g1', Buffer.from('g'));
      const loose = await uploaded('gone', 'g2', Buffer.from('loose'));
      assert.equal((await t.post('/api/tables/gone/rows', { id: 'g1', values: { f: { id: f, name: 'f' }, g: { id: g, name: 'g' } } })).status, 201);
      const fields = made.body.fields.filter((x: { code: string }) => x.code === 'f');
      assert.equal((await t.put(`/api/tables/${made.body.id}`, { fields })).status, 200);
      await t.app.files.settled();
      assert.deepEqual(objects().filter((o) => o.includes(g)), [], 'the removed field took its file');
      assert.equal(objects().filter((o) => o.includes(f)).length, 1);
      assert.equal((await t.delete(`/api/tables/${made.body.id}`)).status, 200);
      await t.app.files.settled();
      for (const id of [f, loose]) assert.deepEqual(objects().filter((o) => o.includes(id)), [], `${id} went with its table`);
    });
  });
});

interface S3Server {
  spec: string;
  endpoint: string;
  env: Record<string, string>;
  stop(): Promise<void>;
}

eachDatabase('files: three-step upload on S3 (s3rver)', (kind) => {
  let t: TestApp;
  let s3: S3Server;

  before(async () => {
    s3 = await (startS3Server as () => Promise<S3Server>)();
    // The service finds credentials where the AWS SDK looks for them.
    Object.assign(process.env, s3.env);
    t = await startApp(kind, { ROWHOUSE_STORAGE: s3.spec, ROWHOUSE_MAX_FILE_BYTES: String(MAX_BYTES) });
    const made = await t.post('/api/tables', { code: 'docs', name: 'docs', fields: [{ code: 'doc', type: 'file' }] });
    assert.equal(made.status, 201, made.text);
  });
  after(async () => {
    await t?.close();
    await s3?.stop();
  });

  async function uploadUrl(rowId: string): Promise<{ id: string; url: string }> {
    const r = await t.post(`/api/tables/docs/rows/${rowId}/file-upload-url`, { count: 1 });
    assert.equal(r.status, 200, r.text);
    return r.body.data[0];
  }
  /** Whether the bucket holds the file's upload, or its attached copy. */
  const exists = async (id: string, which: 'upload' | 'attached' = 'upload') => {
    const table = (await t.get('/api/tables/docs')).body.id;
    return (await t.app.files.storage.stat(`t/${table}/${id}/${which}`)) !== null;
  };

  it('hands out the bucket’s presigned URLs, checks the object on attach, and downloads from the bucket', async () => {
    const bytes = randomBytes(30_000);
    const { id, url } = await uploadUrl('r1');
    assert.ok(url.startsWith(s3.endpoint), url);
    expectError(await t.post('/api/tables/docs/rows', { id: 'r1', values: { doc: { id, name: 'a.bin' } } }), 400);
    const put = await fetch(url, { method: 'PUT', body: bytes, headers: { 'content-type': 'image/png' } });
    assert.equal(put.status, 200, await put.text());
    const created = await t.post('/api/tables/docs/rows', { id: 'r1', values: { doc: { id, name: 'ファイル.png' } } });
    assert.equal(created.status, 201, created.text);
    const doc = created.body.values.doc;
    assert.equal(doc.mimeType, 'image/png');
    assert.equal(doc.size, bytes.length);
    assert.ok(doc.url.startsWith(s3.endpoint), doc.url);
    const res = await fetch(doc.url);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'image/png');
    assert.equal(parseDisposition(res.headers.get('content-disposition') as string).parameters.filename, 'ファイル.png');
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), bytes);
    // An altered download URL: the bucket refuses it.
    assert.equal((await fetch(doc.url.replace('X-Amz-Signature=', 'X-Amz-Signature=0'))).status, 403);
    // The bucket takes another PUT to the upload URL, but the attached file does not change.
    assert.equal((await fetch(url, { method: 'PUT', body: Buffer.from('overwrite'), headers: { 'content-type': 'text/plain' } })).status, 200);
    const again = await t.get('/api/tables/docs/rows/r1');
    assert.deepEqual(Buffer.from(await (await fetch(again.body.values.doc.url)).arrayBuffer()), bytes);

    // Replaced: the old object goes once the change commits.
    const next = await uploadUrl('r1');
    assert.equal((await fetch(next.url, { method: 'PUT', body: Buffer.from('next'), headers: { 'content-type': 'text/plain' } })).status, 200);
    assert.equal((await t.patch('/api/tables/docs/rows/r1', { values: { doc: { id: next.id, name: 'n.txt' } } })).status, 200);
    await t.app.files.settled();
    assert.equal(await exists(id), false);
    assert.equal(await exists(id, 'attached'), false);
    assert.equal(await exists(next.id, 'attached'), true);
  });

  it('refuses, and deletes, an object over the size limit', async () => {
    const { id, url } = await uploadUrl('r2');
    assert.equal((await fetch(url, { method: 'PUT', body: randomBytes(MAX_BYTES + 1), headers: { 'content-type': 'application/zip' } })).status, 200);
    const r = await t.post('/api/tables/docs/rows', { id: 'r2', values: { doc: { id, name: 'big.zip' } } });
    assert.match(expectError(r, 400).message as string, /larger than the limit/);
    assert.equal(await exists(id), false);
  });

  it('sweeps uploads never attached', async () => {
    const { id, url } = await uploadUrl('r3');
    assert.equal((await fetch(url, { method: 'PUT', body: Buffer.from('loose'), headers: { 'content-type': 'text/plain' } })).status, 200);
    const swept = await t.app.files.sweep(new Date(Date.now() + 2 * 86_400_000));
    assert.ok(swept.includes(id));
    assert.equal(await exists(id), false);
  });
});
