import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { CONSOLE_CSP, CONSOLE_DIR, consoleRoutes } from '../../src/http/console-routes.ts';

/**
 * /console's routes over a build of their own (no browser): the page with its CSP, hashed assets kept
 * a year, nothing outside the assets folder, and a 503 in the one error format when nothing is built.
 */
describe('console: the routes serving the built console', () => {
  let dir: string;
  let app: FastifyInstance;
  let bare: FastifyInstance;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-console-'));
    fs.mkdirSync(path.join(dir, 'assets'));
    fs.writeFileSync(path.join(dir, 'index.html'), '<!DOCTYPE html><html><head><script type="module" src="console/assets/a-1.js"></script></head><body></body></html>');
    fs.writeFileSync(path.join(dir, 'assets', 'a-1.js'), 'export {};');
    fs.writeFileSync(path.join(dir, 'secret.txt'), 'not an asset');
    app = Fastify();
    consoleRoutes(app, dir, { publicUrl: 'https://rowhouse.example/behind/a/proxy' });
    bare = Fastify();
    consoleRoutes(bare, path.join(dir, 'nothing-built'));
  });
  after(async () => {
    await app.close();
    await bare.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('finds the project’s dist/console', () => {
    assert.equal(CONSOLE_DIR, path.resolve(import.meta.dirname, '../../dist/console'));
  });

  it('serves the page with its CSP, and the assets', async () => {
    const page = await app.inject('/console?table=orders');
    assert.equal(page.statusCode, 200);
    assert.equal(page.headers['content-security-policy'], CONSOLE_CSP);
    assert.equal(page.headers['cache-control'], 'no-cache');
    assert.match(page.body, /console\/assets\/a-1\.js/);
    // Where uploads may go: the service's public origin (its own upload URLs name it); no bucket on local disk.
    assert.match(page.body, /<meta name="rowhouse-service-origin" content="https:\/\/rowhouse\.example"><\/head>/);
    assert.doesNotMatch(page.body, /rowhouse-bucket-origin/);
    const asset = await app.inject('/console/assets/a-1.js');
    assert.equal(asset.statusCode, 200);
    assert.equal(asset.headers['content-type'], 'text/javascript; charset=utf-8');
    assert.match(String(asset.headers['cache-control']), /immutable/);
    assert.equal(asset.body, 'export {};');
    const slash = await app.inject('/console/?table=orders');
    assert.equal(slash.statusCode, 301);
    assert.equal(slash.headers.location, '../console?table=orders');
  });

  it('serves nothing but the assets folder’s files of known types', async () => {
    for (const url of ['/console/assets/..%2Fsecret.txt', '/console/assets/..%2Findex.html', '/console/assets/missing.js', '/console/assets/.hidden.js', '/console/assets/a-1.exe']) {
      assert.equal((await app.inject(url)).statusCode, 404, url);
    }
  });

  it('answers 503 in the one error format when the console is not built', async () => {
    const res = await bare.inject('/console');
    assert.equal(res.statusCode, 503);
    const body = res.json();
    assert.equal(body.statusCode, 503);
    assert.equal(body.error, 'Service Unavailable');
    assert.match(body.message, /npm run build/);
  });
});
