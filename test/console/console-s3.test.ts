import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PutBucketCorsCommand, S3Client } from '@aws-sdk/client-s3';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Page } from 'playwright-core';
import { CONSOLE_CSP, consoleCsp, consoleRoutes } from '../../src/http/console-routes.ts';
import { type FileStorage, openStorage } from '../../src/files/storage.ts';
// @ts-expect-error: a plain JavaScript module of the test setup, without type declarations
import { startS3Server } from '../support/s3-server.mjs';
import { type ConsoleSession, noBrowser, signIn, startConsole } from './browser.ts';

/**
 * With files in S3 the console's browser PUTs an upload's bytes to the bucket's presigned URL, on
 * the bucket's origin: the page's CSP (connect-src) names that one origin, exactly as the storage's
 * upload URLs carry it, and nothing wider. Without a browser: the origin for path-style and
 * virtual-hosted buckets. In headless Chromium: a file uploaded from the console to s3rver (whose
 * requests pass test/support/s3-server.mjs's Signature V4 check).
 */

const CREDENTIALS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };

describe('console: the CSP names the bucket of the files’ storage', () => {
  let dir: string;
  const apps: FastifyInstance[] = [];
  const storages: FileStorage[] = [];

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-console-csp-'));
    fs.writeFileSync(path.join(dir, 'index.html'), '<!DOCTYPE html><html><head><title>console</title></head><body></body></html>');
  });
  after(async () => {
    for (const app of apps) await app.close();
    for (const storage of storages) await storage.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /**
   * The CSP of /console served over the storage `spec` names, with the warnings told; the bucket's
   * origin the page names for the console's uploads (upload-target.ts); and an upload URL of that storage.
   */
  async function served(spec: string): Promise<{ csp: string; bucket: string | null; uploadUrl: string | null; warnings: string[] }> {
    const storage = await openStorage(spec, { s3Credentials: CREDENTIALS });
    storages.push(storage);
    const warnings: string[] = [];
    const app = Fastify();
    apps.push(app);
    consoleRoutes(app, dir, { storage, warn: (m) => warnings.push(m) });
    const page = await app.inject('/console');
    assert.equal(page.statusCode, 200);
    // Asked twice: the origin, once found, is kept.
    assert.equal((await app.inject('/console')).headers['content-security-policy'], page.headers['content-security-policy']);
    const bucket = /<meta name="rowhouse-bucket-origin" content="([^"]*)">/.exec(page.body)?.[1] ?? null;
    return { csp: page.headers['content-security-policy'] as string, bucket, uploadUrl: (await storage.uploadUrl?.('t/tbl_1/file_1/upload', 3600)) ?? null, warnings };
  }

  it('names a path-style endpoint’s origin (no path, no bucket), as in its upload URLs', async () => {
    const { csp, bucket, uploadUrl, warnings } = await served(`s3://files/some/prefix?endpoint=${encodeURIComponent('http://minio.internal:9000')}&forcePathStyle=true`);
    assert.ok(uploadUrl?.startsWith('http://minio.internal:9000/files/some/prefix/t/tbl_1/file_1/upload?'), uploadUrl ?? '');
    assert.equal(csp, consoleCsp('http://minio.internal:9000'));
    assert.equal(bucket, 'http://minio.internal:9000', 'the page names the same origin to the console');
    assert.match(csp, /; connect-src 'self' http:\/\/minio\.internal:9000; /);
    assert.deepEqual(warnings, []);
  });

  it('names a virtual-hosted bucket’s own host on AWS, not every bucket’s', async () => {
    const { csp, bucket, uploadUrl } = await served('s3://rowhouse-files?region=eu-west-1');
    assert.equal(new URL(uploadUrl as string).origin, 'https://rowhouse-files.s3.eu-west-1.amazonaws.com');
    assert.equal(bucket, 'https://rowhouse-files.s3.eu-west-1.amazonaws.com');
    assert.equal(
      csp,
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; font-src 'self'; connect-src 'self' https://rowhouse-files.s3.eu-west-1.amazonaws.com; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
  });

  it('keeps this origin alone for files on local disk', async () => {
    const { csp, bucket, uploadUrl } = await served(`file:${path.join(dir, 'files')}`);
    assert.equal(uploadUrl, null);
    assert.equal(bucket, null);
    assert.equal(csp, CONSOLE_CSP);
    assert.match(csp, /; connect-src 'self'; /);
  });

  it('keeps this origin alone, and says why, when the bucket’s origin cannot be named in a CSP', async () => {
    const { csp, bucket, uploadUrl, warnings } = await served(`s3://files?endpoint=${encodeURIComponent('http://[::1]:9000')}&forcePathStyle=true`);
    assert.ok(uploadUrl?.startsWith('http://[::1]:9000/files/'), uploadUrl ?? '');
    assert.equal(csp, CONSOLE_CSP);
    assert.equal(bucket, null, 'nor named to the console, which then refuses its upload URLs (below)');
    assert.equal(warnings.length, 2, 'told at each request, as the origin is asked again');
    assert.match(warnings[0], /uploads to the bucket will be refused by the page's CSP: the bucket's origin http:\/\/\[::1\]:9000 cannot be named/);
  });
});

interface S3Server {
  spec: string;
  endpoint: string;
  bucket: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  env: Record<string, string>;
  stop(): Promise<void>;
}

describe('console: a file uploaded from the console to an S3 bucket, in headless Chromium [sqlite]', { skip: noBrowser }, () => {
  let s3: S3Server;
  let s: ConsoleSession;
  let page: Page;

  before(async () => {
    s3 = await (startS3Server as () => Promise<S3Server>)();
    // The service finds credentials where the AWS SDK looks for them.
    Object.assign(process.env, s3.env);
    s = await startConsole({ env: { ROWHOUSE_STORAGE: s3.spec }, origins: [s3.endpoint] });
    // The bucket lets the console's origin PUT to it, as its owner sets it up for a browser client (PutBucketCors).
    const client = new S3Client({ region: 'us-east-1', endpoint: s3.endpoint, forcePathStyle: true, credentials: s3.credentials });
    await client.send(
      new PutBucketCorsCommand({ Bucket: s3.bucket, CORSConfiguration: { CORSRules: [{ AllowedOrigins: [s.base], AllowedMethods: ['PUT', 'GET'], AllowedHeaders: ['*'] }] } }),
    );
    client.destroy();
    const made = await s.t.post('/api/tables', { code: 'docs', name: 'Docs', fields: [{ code: 'title', name: 'Title', type: 'text' }, { code: 'doc', name: 'Document', type: 'file' }] });
    assert.equal(made.status, 201, made.text);
    assert.equal((await s.t.post('/api/tables/docs/rows', { id: 'd1', values: { title: 'First' } })).status, 201);
    page = await s.newPage();
    await page.goto(`${s.base}/console?table=docs`);
    await signIn(page);
  });
  after(async () => {
    await s?.close();
    await s3?.stop();
  });

  it('serves the page with the bucket’s origin in connect-src, and nothing wider', async () => {
    const res = await fetch(`${s.base}/console`);
    assert.equal(res.headers.get('content-security-policy'), consoleCsp(s3.endpoint));
    assert.match(s3.endpoint, /^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('uploads a file from the row panel straight to the bucket, with its progress, and downloads it from there', async () => {
    const grid = page.getByRole('grid');
    await grid.getByRole('button', { name: 'Open row d1', exact: true }).click();
    const panel = page.getByRole('dialog', { name: 'Row d1' });
    const bytes = Buffer.from('y'.repeat(200_000) + ' the end');
    await panel.getByLabel('Upload a file to Document').setInputFiles({ name: 'report "final".txt', mimeType: 'text/plain', buffer: bytes });
    await panel.waitFor({ state: 'detached' });
    const link = grid.getByRole('link', { name: 'report "final".txt' });
    await link.waitFor();
    assert.deepEqual(s.problems, []);

    // The bytes went to the bucket's presigned URL, never through the service.
    const put = s.urls.find((u) => u.startsWith(`${s3.endpoint}/${s3.bucket}/`) && u.includes('X-Amz-Signature='));
    assert.ok(put, `no upload to the bucket among ${s.urls.join(' ')}`);
    assert.ok(!s.urls.some((u) => new URL(u).pathname.startsWith('/files/')), 'nothing went to the service’s own file URLs');
    // The bucket checks signatures: the same URL with its signature altered is refused.
    const altered = new URL(put);
    const sig = altered.searchParams.get('X-Amz-Signature') as string;
    altered.searchParams.set('X-Amz-Signature', (sig[0] === '0' ? '1' : '0') + sig.slice(1));
    const forged = await fetch(altered, { method: 'PUT', body: 'forged', headers: { 'content-type': 'text/plain' } });
    assert.equal(forged.status, 403, await forged.text());

    const stored = (await s.t.get('/api/tables/docs/rows/d1')).body.values.doc;
    assert.deepEqual([stored.name, stored.mimeType, stored.size], ['report "final".txt', 'text/plain', bytes.length]);
    const href = (await link.getAttribute('href')) as string;
    assert.ok(href.startsWith(`${s3.endpoint}/${s3.bucket}/`), href);
    const download = await fetch(href);
    assert.equal(download.status, 200);
    assert.deepEqual(Buffer.from(await download.arrayBuffer()), bytes);
  });

  it('still refuses a connection to any other origin, the same server under another name included', async () => {
    const other = s3.endpoint.replace('127.0.0.1', 'localhost');
    const refused = (await page.evaluate(`new Promise((resolve) => {
      document.addEventListener('securitypolicyviolation', (e) => resolve(e.effectiveDirective + ' ' + e.blockedURI), { once: true });
      fetch(${JSON.stringify(`${other}/${s3.bucket}/x`)}).catch(() => undefined);
    })`)) as string;
    // (Chrome names a blocked URL of another origin by its origin alone.)
    assert.ok(refused.startsWith(`connect-src ${other}`), refused);
  });
});

describe('console: an upload URL on an origin the page does not name is refused before a byte is sent, in headless Chromium [sqlite]', { skip: noBrowser }, () => {
  // A bucket whose origin a CSP cannot name (an IPv6 address): the service serves the page without
  // it, so the upload URLs it hands out name an origin the console may not send to.
  const unnamed = 'http://[::1]:9';
  let s: ConsoleSession;
  let page: Page;

  before(async () => {
    // Presigning is local (no request is made): any credentials sign.
    Object.assign(process.env, { AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey });
    s = await startConsole({ env: { ROWHOUSE_STORAGE: `s3://files?endpoint=${encodeURIComponent(unnamed)}&forcePathStyle=true` } });
    assert.equal((await s.t.post('/api/tables', { code: 'docs', name: 'Docs', fields: [{ code: 'doc', name: 'Document', type: 'file' }] })).status, 201);
    assert.equal((await s.t.post('/api/tables/docs/rows', { id: 'd1', values: {} })).status, 201);
    page = await s.newPage();
    await page.goto(`${s.base}/console?table=docs`);
    await signIn(page);
  });
  after(async () => {
    await s?.close();
  });

  it('says which origin the URL named and which it may be, sends nothing, and leaves the row as it was', async () => {
    await page.getByRole('grid').getByRole('button', { name: 'Open row d1', exact: true }).click();
    const panel = page.getByRole('dialog', { name: 'Row d1' });
    await panel.getByLabel('Upload a file to Document').setInputFiles({ name: 'a.txt', mimeType: 'text/plain', buffer: Buffer.from('bytes') });
    const alert = panel.getByRole('alert').filter({ hasText: 'Not uploaded: the upload URL names http://[::1]:9, which is neither this service nor its files' });
    await alert.waitFor();
    assert.match(await alert.innerText(), new RegExp(`\\(${s.base.replace(/[.]/g, '\\.')}, http://rowhouse\\.test\\)`));
    assert.equal(await page.locator('meta[name="rowhouse-bucket-origin"]').count(), 0);
    assert.deepEqual(s.urls.filter((u) => u.startsWith('http://[::1]')), [], 'no request to that origin');
    assert.deepEqual(s.problems, [], 'refused before the CSP had to');
    assert.equal((await s.t.get('/api/tables/docs/rows/d1')).body.values.doc, null);
  });
});
