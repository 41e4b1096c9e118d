import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { parse } from 'content-disposition';
import { ConfigError } from '../../src/config.ts';
import { attachment } from '../../src/files/disposition.ts';
import { fileNameProblem } from '../../src/domain/file-names.ts';
import { type FileStorage, FileTooLarge, openStorage, parseS3Spec } from '../../src/files/storage.ts';
// @ts-expect-error: a plain JavaScript module of the test setup, without type declarations
import { startS3Server as startS3ServerUntyped } from '../support/s3-server.mjs';

interface S3Server {
  endpoint: string;
  bucket: string;
  spec: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  pendingUploads(): string[];
  stop(): Promise<void>;
}
const startS3Server = startS3ServerUntyped as () => Promise<S3Server>;

/**
 * The byte storage behind file attachments (CONTRACT §8), one contract suite over both backends:
 * local disk, and S3 through s3rver (with real Signature V4 checks added by test/support/s3-server.mjs).
 */

const MiB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `n` bytes of every value, in an order that is not a repeating pattern of any short period. */
function bytes(n: number, seed = 1): Buffer {
  const b = Buffer.alloc(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b[i] = x & 0xff;
  }
  return b;
}

/** A body of `total` bytes made chunk by chunk as it is read, and the SHA-256 of what it made. */
function generated(total: number, chunk = 64 * 1024): { body: Readable; sha256: () => string } {
  const hash = createHash('sha256');
  async function* gen() {
    for (let sent = 0, i = 0; sent < total; i++) {
      const b = bytes(Math.min(chunk, total - sent), i + 7);
      hash.update(b);
      sent += b.length;
      yield b;
    }
  }
  return { body: Readable.from(gen(), { objectMode: false }), sha256: () => hash.digest('hex') };
}

/** A body that sends `first` and then fails with `err`. */
function failing(first: Buffer, err: Error): Readable {
  async function* gen() {
    yield first;
    await sleep(5);
    throw err;
  }
  return Readable.from(gen(), { objectMode: false });
}

async function readAll(storage: FileStorage, key: string): Promise<Buffer | null> {
  const got = await storage.read(key);
  if (got === null) return null;
  const body = Buffer.concat(await got.body.toArray());
  assert.equal(got.size, body.length, `${key}: the size read matches the bytes streamed`);
  return body;
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

interface Backend {
  storage: FileStorage;
  /** Everything the backend holds: object keys, and its temp files or unfinished uploads. */
  artefacts(): Promise<string[]>;
}

function listFiles(root: string, dir = root): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? listFiles(root, p) : [path.relative(root, p)];
  });
}

const INVALID_KEYS = [
  '',
  '/t/1/a',
  't/../x',
  '..',
  '../x',
  't/./a',
  '.',
  't//a',
  't/a/',
  't/a b',
  't\\a',
  't/ä',
  't/a\0',
  '.partial/x',
  't/.hidden',
  'x'.repeat(1025),
];

/** The same contract for each backend; `open` gives a fresh, empty one for the describe. */
function contractSuite(name: string, open: () => Promise<Backend & { close(): Promise<void> }>): void {
  describe(`FileStorage contract [${name}]`, () => {
    let b: Backend & { close(): Promise<void> };
    let storage: FileStorage;
    before(async () => {
      b = await open();
      storage = b.storage;
    });
    after(() => b?.close());

    it('writes, stats, reads and deletes binary bytes', async () => {
      const data = bytes(70_000);
      assert.equal(await storage.write('t/1/round', Readable.from([data.subarray(0, 1), data.subarray(1)]), 1 * MiB), data.length);
      const stat = await storage.stat('t/1/round');
      assert.equal(stat?.size, data.length);
      if (storage.presigns) assert.equal(typeof stat?.contentType, 'string', 'S3 keeps a content type');
      else assert.equal(stat?.contentType, null, 'local disk keeps no content type');
      assert.deepEqual(await readAll(storage, 't/1/round'), data);
      await storage.delete('t/1/round');
      assert.equal(await storage.stat('t/1/round'), null);
      assert.equal(await storage.read('t/1/round'), null);
    });

    it('an empty body is an object of 0 bytes', async () => {
      assert.equal(await storage.write('t/1/empty', Readable.from([]), 10), 0);
      assert.equal((await storage.stat('t/1/empty'))?.size, 0);
      assert.deepEqual(await readAll(storage, 't/1/empty'), Buffer.alloc(0));
      await storage.delete('t/1/empty');
    });

    it('streams a 12 MiB body from a generator and reads back the same bytes', async () => {
      const total = 12 * MiB; // more than two S3 parts: a multipart upload
      const { body, sha256: written } = generated(total);
      assert.equal(await storage.write('t/2/big', body, 100 * MiB), total);
      assert.equal((await storage.stat('t/2/big'))?.size, total);
      const got = await storage.read('t/2/big');
      assert.equal(got?.size, total);
      const hash = createHash('sha256');
      for await (const chunk of got!.body) hash.update(chunk as Buffer);
      assert.equal(hash.digest('hex'), written());
      await storage.delete('t/2/big');
    });

    it('a body of exactly maxBytes is kept; one byte more rejects with FileTooLarge and leaves nothing', async () => {
      assert.equal(await storage.write('t/3/exact', Readable.from([bytes(1000)]), 1000), 1000);
      const before = (await b.artefacts()).sort();
      const body = Readable.from([bytes(600), bytes(401)]);
      await assert.rejects(storage.write('t/3/over', body, 1000), (err: unknown) => {
        assert.ok(err instanceof FileTooLarge);
        assert.equal(err.maxBytes, 1000);
        return true;
      });
      assert.ok(body.destroyed, 'the body is not read further');
      assert.equal(await storage.stat('t/3/over'), null);
      assert.deepEqual((await b.artefacts()).sort(), before, 'no object, temp file or pending upload is left');
      await storage.delete('t/3/exact');
    });

    it('a large body past the limit (after S3 parts went up) leaves nothing either', async () => {
      const before = (await b.artefacts()).sort();
      await assert.rejects(storage.write('t/3/big-over', generated(12 * MiB).body, 6 * MiB), FileTooLarge);
      assert.equal(await storage.stat('t/3/big-over'), null);
      assert.deepEqual((await b.artefacts()).sort(), before);
    });

    it('replaces an object; a write that fails leaves the old bytes as they were', async () => {
      await storage.write('t/4/r', Readable.from([Buffer.from('first version, longer')]), 100);
      assert.equal(await storage.write('t/4/r', Readable.from([Buffer.from('second')]), 100), 6);
      assert.equal((await readAll(storage, 't/4/r'))?.toString(), 'second');
      assert.equal((await storage.stat('t/4/r'))?.size, 6);

      await assert.rejects(storage.write('t/4/r', Readable.from([bytes(101)]), 100), FileTooLarge);
      assert.equal((await readAll(storage, 't/4/r'))?.toString(), 'second');
      const boom = new Error('client went away');
      await assert.rejects(storage.write('t/4/r', failing(bytes(10), boom), 100), (err) => err === boom);
      assert.equal((await readAll(storage, 't/4/r'))?.toString(), 'second');
      await storage.delete('t/4/r');
    });

    it('a body that fails mid-stream rejects with its error and leaves nothing', async () => {
      const before = (await b.artefacts()).sort();
      const boom = new Error('connection reset');
      await assert.rejects(storage.write('t/5/broken', failing(bytes(5000), boom), 1 * MiB), (err) => err === boom);
      assert.equal(await storage.stat('t/5/broken'), null);
      assert.deepEqual((await b.artefacts()).sort(), before);
    });

    it('deleting an absent key, or a key that is only a prefix of others, is not an error', async () => {
      await storage.delete('t/6/never-written');
      await storage.write('t/6/dir/child', Readable.from([Buffer.from('x')]), 10);
      await storage.delete('t/6/dir');
      assert.equal(await storage.stat('t/6/dir'), null, 'a prefix of keys is no object');
      assert.equal(await storage.read('t/6/dir'), null);
      assert.equal((await readAll(storage, 't/6/dir/child'))?.toString(), 'x');
      await storage.delete('t/6/dir/child');
    });

    it('refuses invalid keys in every operation, and destroys the body it was given', async () => {
      for (const key of INVALID_KEYS) {
        const body = Readable.from([Buffer.from('x')]);
        await assert.rejects(storage.write(key, body, 10), /Invalid storage key/, `write ${JSON.stringify(key)}`);
        assert.ok(body.destroyed);
        await assert.rejects(storage.read(key), /Invalid storage key/, `read ${JSON.stringify(key)}`);
        await assert.rejects(storage.stat(key), /Invalid storage key/, `stat ${JSON.stringify(key)}`);
        await assert.rejects(storage.delete(key), /Invalid storage key/, `delete ${JSON.stringify(key)}`);
        if (storage.uploadUrl) await assert.rejects(storage.uploadUrl(key, 60), /Invalid storage key/);
      }
      await assert.rejects(storage.write('t/7/a', Readable.from([]), -1), RangeError);
      await assert.rejects(storage.write('t/7/a', Readable.from([]), 1.5), RangeError);
    });
  });
}

contractSuite('local', async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-files-'));
  const storage = await openStorage(`file:${root}`);
  return {
    storage,
    artefacts: async () => listFiles(root),
    close: async () => {
      await storage.close();
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
});

/** The spec of the server's bucket with a key prefix: keys of the storage are `files/<key>` in the bucket. */
const prefixedSpec = (s: S3Server) =>
  `s3://${s.bucket}/files?endpoint=${encodeURIComponent(s.endpoint)}&region=us-east-1&forcePathStyle=true`;

function bucketClient(s: S3Server): S3Client {
  return new S3Client({ endpoint: s.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: s.credentials });
}

async function bucketKeys(client: S3Client, bucket: string): Promise<string[]> {
  const out = await client.send(new ListObjectsV2Command({ Bucket: bucket }));
  return (out.Contents ?? []).map((o) => o.Key ?? '');
}

// One S3 server for the file, started before its first test.
let server: S3Server;
before(async () => {
  server = await startS3Server();
});
after(() => server?.stop());

contractSuite('s3', async () => {
  const client = bucketClient(server);
  const storage = await openStorage(prefixedSpec(server), { s3Credentials: server.credentials });
  return {
    storage,
    artefacts: async () => [...(await bucketKeys(client, server.bucket)), ...server.pendingUploads().map((id) => `upload:${id}`)],
    close: async () => {
      await storage.close();
      client.destroy();
    },
  };
});

describe('S3 storage: presigned URLs against a server that checks signatures', () => {
  let s: S3Server;
  let storage: FileStorage;
  before(async () => {
    s = server;
    storage = await openStorage(prefixedSpec(s), { s3Credentials: s.credentials });
  });
  after(() => storage?.close());

  it('presigns, and keeps keys under the spec’s prefix', async () => {
    assert.equal(storage.presigns, true);
    await storage.write('t/9/prefixed', Readable.from([Buffer.from('p')]), 10);
    const client = bucketClient(s);
    assert.ok((await bucketKeys(client, s.bucket)).includes('files/t/9/prefixed'));
    client.destroy();
    await storage.delete('t/9/prefixed');
  });

  it('a presigned PUT with fetch stores the bytes and their Content-Type; stat reads both back', async () => {
    const url = await storage.uploadUrl!('t/10/put', 3600);
    assert.doesNotMatch(url, /x-amz-checksum|x-amz-sdk-checksum/i, 'no checksum of an empty body signed in (aws-sdk-js-v3#6994)');
    const data = bytes(3000);
    const res = await fetch(url, { method: 'PUT', body: data, headers: { 'content-type': 'image/png' } });
    assert.equal(res.status, 200, await res.text());
    assert.deepEqual(await storage.stat('t/10/put'), { size: 3000, contentType: 'image/png' });
    assert.deepEqual(await readAll(storage, 't/10/put'), data);
  });

  it('copies an object within the bucket, bytes and type, under the prefix', async () => {
    const url = await storage.uploadUrl!('t/11/from', 3600);
    const data = bytes(2000, 11);
    assert.equal((await fetch(url, { method: 'PUT', body: data, headers: { 'content-type': 'application/pdf' } })).status, 200);
    await storage.copy!('t/11/from', 't/11/to');
    assert.deepEqual(await storage.stat('t/11/to'), { size: 2000, contentType: 'application/pdf' });
    assert.deepEqual(await readAll(storage, 't/11/to'), data);
    // The copy is its own object: replacing the source leaves it as it was.
    await storage.write('t/11/from', Readable.from([Buffer.from('new')]), 10);
    assert.deepEqual(await readAll(storage, 't/11/to'), data);
    await storage.delete('t/11/from');
    await storage.delete('t/11/to');
  });

  it('a presigned GET answers the bytes with the requested Content-Type and Content-Disposition', async () => {
    const data = bytes(5000, 3);
    await storage.write('t/11/get', Readable.from([data]), 10_000);
    const disposition = attachment('報告書 "final".pdf');
    const url = await storage.downloadUrl!('t/11/get', { contentType: 'application/pdf', disposition, expiresInSeconds: 3600 });
    const res = await fetch(url);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/pdf');
    assert.equal(res.headers.get('content-disposition'), disposition);
    assert.equal(parse(res.headers.get('content-disposition')!).parameters.filename, '報告書 "final".pdf');
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), data);
  });

  it('an altered presigned URL gets 403, and an altered PUT stores nothing', async () => {
    await storage.write('t/12/get', Readable.from([Buffer.from('secret')]), 100);
    const get = await storage.downloadUrl!('t/12/get', { contentType: 'text/plain', disposition: attachment('a.txt'), expiresInSeconds: 3600 });
    const u = new URL(get);
    const sig = u.searchParams.get('X-Amz-Signature')!;
    const variants: Record<string, (x: URL) => void> = {
      signature: (x) => x.searchParams.set('X-Amz-Signature', (sig[0] === '0' ? '1' : '0') + sig.slice(1)),
      'response type': (x) => x.searchParams.set('response-content-type', 'text/html'),
      disposition: (x) => x.searchParams.set('response-content-disposition', 'inline'),
      expiry: (x) => x.searchParams.set('X-Amz-Expires', '604800'),
      key: (x) => (x.pathname = x.pathname.replace('t/12/get', 't/12/other')),
      'no signature': (x) => x.searchParams.delete('X-Amz-Signature'),
      anonymous: (x) => (x.search = ''),
    };
    for (const [what, alter] of Object.entries(variants)) {
      const x = new URL(get);
      alter(x);
      const res = await fetch(x);
      assert.equal(res.status, 403, `${what}: ${await res.text()}`);
    }
    assert.equal((await fetch(get)).status, 200, 'the URL as issued works');

    const put = new URL(await storage.uploadUrl!('t/12/put', 3600));
    put.pathname = put.pathname.replace('t/12/put', 't/12/elsewhere');
    const res = await fetch(put, { method: 'PUT', body: 'x' });
    assert.equal(res.status, 403);
    assert.equal(await storage.stat('t/12/elsewhere'), null);
    assert.equal(await storage.stat('t/12/put'), null);
  });

  it('presigned URLs get 403 once expired', async () => {
    await storage.write('t/13/get', Readable.from([Buffer.from('soon gone')]), 100);
    const get = await storage.downloadUrl!('t/13/get', { contentType: 'text/plain', disposition: 'attachment', expiresInSeconds: 1 });
    const put = await storage.uploadUrl!('t/13/put', 1);
    await sleep(2200); // the signing time is whole seconds
    assert.equal((await fetch(get)).status, 403);
    assert.equal((await fetch(put, { method: 'PUT', body: 'late' })).status, 403);
    assert.equal(await storage.stat('t/13/put'), null);
  });

  it('a wrong secret is an error, never "absent"', async () => {
    const wrong = await openStorage(prefixedSpec(s), { s3Credentials: { ...s.credentials, secretAccessKey: 'not-the-secret' } });
    try {
      await assert.rejects(wrong.stat('t/14/x'));
      await assert.rejects(wrong.read('t/14/x'));
      await assert.rejects(wrong.write('t/14/x', Readable.from([Buffer.from('x')]), 10));
      assert.equal(await storage.stat('t/14/x'), null);
    } finally {
      await wrong.close();
    }
  });
});

describe('local storage', () => {
  it('does not presign; a reader that opened the old bytes reads all of them while a write replaces them', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-files-'));
    try {
      const storage = await openStorage(`file:${root}`);
      assert.equal(storage.presigns, false);
      assert.equal(storage.uploadUrl, undefined);
      assert.equal(storage.downloadUrl, undefined);
      const old = bytes(300_000, 1);
      const next = bytes(200_000, 2);
      await storage.write('t/1/a', Readable.from([old]), MiB);
      const reading = await storage.read('t/1/a');
      await storage.write('t/1/a', Readable.from([next]), MiB);
      assert.equal(reading?.size, old.length);
      assert.equal(sha256(Buffer.concat(await reading!.body.toArray())), sha256(old), 'old bytes, not a mix');
      assert.equal(sha256((await readAll(storage, 't/1/a'))!), sha256(next));
      assert.deepEqual(listFiles(root), [path.join('t', '1', 'a')], 'no temp file left');
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('opening removes temp files a crash left an hour ago or more, and keeps younger ones', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-files-'));
    try {
      fs.mkdirSync(path.join(root, '.partial'));
      const stale = path.join(root, '.partial', 'stale.partial');
      const young = path.join(root, '.partial', 'young.partial');
      fs.writeFileSync(stale, 'half');
      fs.writeFileSync(young, 'half');
      const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
      fs.utimesSync(stale, twoHoursAgo, twoHoursAgo);
      const storage = await openStorage(`file:${root}`);
      assert.equal(fs.existsSync(stale), false);
      assert.equal(fs.existsSync(young), true);
      assert.equal(await storage.stat('t/1/x'), null);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('file:PATH is created if missing, relative to the working directory, and file:///PATH is a file URL', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-files-'));
    try {
      const nested = path.join(root, 'a', 'b');
      const s1 = await openStorage(`file:${path.relative(process.cwd(), nested)}`);
      await s1.write('k', Readable.from([Buffer.from('1')]), 1);
      assert.equal(fs.readFileSync(path.join(nested, 'k'), 'utf8'), '1');
      const s2 = await openStorage(pathToFileURL(nested).href);
      assert.equal((await readAll(s2, 'k'))?.toString(), '1');
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('a service on local disk never loads the AWS SDK (an s3:// spec does)', () => {
    // A child process writes every module URL that resolves into @aws-sdk to stderr.
    const hooks = `export async function resolve(s, c, next) {
      const r = await next(s, c);
      if (r.url.includes('/@aws-sdk/')) process.stderr.write('SDK ' + r.url + '\\n');
      return r;
    }`;
    const storageModule = pathToFileURL(path.resolve('src/files/storage.ts')).href;
    const sdkModulesLoaded = (spec: string): string => {
      const child = spawnSync(
        process.execPath,
        [
          '--import',
          'tsx',
          '--input-type=module',
          '-e',
          `import { register } from 'node:module';
           register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hooks)}));
           const { openStorage } = await import(${JSON.stringify(storageModule)});
           const s = await openStorage(${JSON.stringify(spec)});
           await s.close();`,
        ],
        { encoding: 'utf8', env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' } },
      );
      assert.equal(child.status, 0, child.stderr);
      return child.stderr;
    };
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-files-'));
    try {
      assert.doesNotMatch(sdkModulesLoaded(`file:${dir}`), /SDK /);
      assert.match(sdkModulesLoaded('s3://some-bucket?endpoint=http://127.0.0.1:9&region=us-east-1'), /SDK .*@aws-sdk\/client-s3/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('openStorage: storage specs', () => {
  it('reads bucket, prefix, endpoint, region and path style from an s3:// spec', () => {
    assert.deepEqual(parseS3Spec('s3://my-bucket/some/prefix/?endpoint=http://minio:9000&region=eu-west-1&forcePathStyle=true'), {
      bucket: 'my-bucket',
      prefix: 'some/prefix',
      endpoint: 'http://minio:9000',
      region: 'eu-west-1',
      forcePathStyle: true,
    });
    assert.deepEqual(parseS3Spec('s3://my-bucket', {}), {
      bucket: 'my-bucket',
      prefix: '',
      endpoint: undefined,
      region: 'us-east-1',
      forcePathStyle: false,
    });
    assert.equal(parseS3Spec('s3://my-bucket', { AWS_REGION: 'ap-northeast-1' }).region, 'ap-northeast-1');
    assert.equal(parseS3Spec(`s3://b-1?endpoint=${encodeURIComponent('https://s3.example.com:8443/')}`).endpoint, 'https://s3.example.com:8443/');
  });

  it('refuses a malformed spec with a message that names the fault', async () => {
    const cases: [string, RegExp][] = [
      ['s3://', /bucket name|not a URL/],
      ['s3://ab', /"ab" is not a bucket name/],
      ['s3://key:secret@bucket', /credentials do not belong in the URL/],
      ['s3://bucket:9000', /no port/],
      ['s3://bucket?endpoint=ftp://x', /endpoint must be an http/],
      ['s3://bucket?endpoint=not a url', /endpoint must be an http/],
      ['s3://bucket?forcePathStyle=yes', /forcePathStyle must be true or false/],
      ['s3://bucket?forcepathstyle=true', /unknown parameter "forcepathstyle"/],
      ['s3://bucket?region=us-east-1&region=eu-west-1', /"region" is given more than once/],
      ['s3://bucket?region=US%20East', /not a region name/],
      ['s3://bucket/../up', /prefix/],
      ['s3://bucket/a//b', /prefix/],
      ['file:', /needs a directory/],
      ['http://bucket', /must start with file: or s3:\/\//],
    ];
    for (const [spec, message] of cases) {
      await assert.rejects(openStorage(spec), (err: unknown) => {
        assert.ok(err instanceof ConfigError, `${spec}: ${String(err)}`);
        assert.match(err.message, message, spec);
        assert.ok(err.message.includes('ROWHOUSE_STORAGE'), spec);
        assert.ok(!err.message.includes('key:secret'), 'credentials are not repeated');
        return true;
      });
    }
  });
});

const HEADER_UNSAFE = /[\x00-\x1f\x7f]/;

describe('attachment(name): a Content-Disposition value safe for any name', () => {
  const cases: [string, string][] = [
    ['report.pdf', 'report.pdf'],
    ['報告書.pdf', '報告書.pdf'],
    ['résumé final.docx', 'résumé final.docx'],
    ['say "hi".txt', 'say "hi".txt'],
    ['report "final".pdf', 'report "final".pdf'],
    [' leading space.txt', ' leading space.txt'],
    ['a\r\nSet-Cookie: x=1.txt', 'aSet-Cookie: x=1.txt'],
    ['nul\0byte.txt', 'nulbyte.txt'],
    ['tab\tand\x7fdel\x85.txt', 'tabanddel.txt'],
    ['../../etc/passwd', '_.._etc_passwd'],
    ['..\\..\\windows\\win.ini', '_.._windows_win.ini'],
    ['C:\\Users\\me\\a.txt', 'C:_Users_me_a.txt'],
    ['\\\\server\\share\\"x".txt', '__server_share_"x".txt'],
    ['.bashrc', 'bashrc'],
    [' . ', 'download'],
    ['..', 'download'],
    ['', 'download'],
    ['\r\n', 'download'],
    ['100%41.txt', '100%41.txt'],
    ['a;b=c, d.txt', 'a;b=c, d.txt'],
    ['\u202Efdp.exe', 'fdp.exe'],
    ['lone \uD800 surrogate.txt', 'lone \uFFFD surrogate.txt'],
    ['emoji 😀.png', 'emoji 😀.png'],
  ];
  for (const [name, expected] of cases) {
    it(`${JSON.stringify(name)} → ${JSON.stringify(expected)}`, () => {
      const header = attachment(name);
      assert.doesNotMatch(header, HEADER_UNSAFE, 'no CR, LF, NUL or other control character');
      assert.match(header, /^[\x20-\x7e]+$/, 'printable ASCII only, as a header value must be');
      assert.ok(header.startsWith('attachment;'));
      const parsed = parse(header);
      assert.equal(parsed.type, 'attachment');
      assert.equal(parsed.parameters.filename, expected);
      assert.doesNotMatch(parsed.parameters.filename!, /[/\\]/, 'a base name only');
    });
  }

  it('always quotes the plain filename, and sends filename* whenever the plain name differs from the stored one', () => {
    assert.equal(attachment('報告書.pdf'), "attachment; filename=\"download.pdf\"; filename*=UTF-8''%E5%A0%B1%E5%91%8A%E6%9B%B8.pdf");
    assert.equal(parse(attachment('報告書.pdf'), { extended: false }).parameters.filename, 'download.pdf');
    assert.equal(parse(attachment('résumé.pdf'), { extended: false }).parameters.filename, 'resume.pdf');
    assert.equal(attachment('report.pdf'), 'attachment; filename="report.pdf"');
    assert.equal(attachment('report "final".pdf'), `attachment; filename="report 'final'.pdf"; filename*=UTF-8''report%20%22final%22.pdf`);
    assert.equal(attachment(' leading space.txt'), `attachment; filename="leading space.txt"; filename*=UTF-8''%20leading%20space.txt`);
    assert.equal(attachment("it's (1)*.txt"), `attachment; filename="it's (1)*.txt"`);
    assert.equal(attachment("it's (1)*.tx\u00e9"), `attachment; filename="it's (1)*.txe"; filename*=UTF-8''it%27s%20%281%29%2A.tx%C3%A9`);
  });

  it('keeps a very long name to 255 characters, extension included', () => {
    const parsed = parse(attachment(`${'長'.repeat(400)}.pdf`)).parameters.filename!;
    assert.equal([...parsed].length, 255);
    assert.ok(parsed.endsWith('長.pdf'));
  });
});

describe('fileNameProblem(name)', () => {
  it('accepts ordinary names, non-ASCII ones and 255 characters', () => {
    for (const name of ['report.pdf', 'report "final".pdf', ' leading space.txt', '報告書.pdf', "it's (1) & more; x=y.txt", '😀'.repeat(255), 'a'.repeat(255), '.env', 'a..b']) {
      assert.equal(fileNameProblem(name), null, name);
    }
  });

  it('refuses, with the reason, names that cannot be stored', () => {
    const cases: [string, RegExp][] = [
      ['', /empty/],
      ['   ', /empty or only spaces/],
      ['a'.repeat(256), /at most 255 characters/],
      ['😀'.repeat(256), /at most 255 characters/],
      ['a\rb', /control characters/],
      ['a\nb', /control characters/],
      ['a\0b', /control characters/],
      ['a\tb', /control characters/],
      ['a\x7fb', /control characters/],
      ['a\x9bb', /control characters/],
      ['../etc/passwd', /\/ or \\/],
      ['a\\b', /\/ or \\/],
      ['.', /\. or \.\./],
      ['..', /\. or \.\./],
      ['bad \uDC00', /well-formed Unicode/],
    ];
    for (const [name, reason] of cases) {
      const problem = fileNameProblem(name);
      assert.ok(problem !== null, JSON.stringify(name));
      assert.match(problem, reason, JSON.stringify(name));
    }
  });
});
