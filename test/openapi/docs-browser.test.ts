import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { type Browser, chromium } from 'playwright-core';
import { type ListeningApp, startListening } from '../support/listening.ts';

/**
 * /docs in a real browser (CONTRACT §10): headless Chromium renders the reference from a listening
 * service, with nothing fetched from any other origin (it works offline), no error in the page
 * (a script the CSP blocks would be one), and every operation of /openapi.json shown, the rows
 * routes included. The page does not depend on the database: SQLite only.
 */

const CHROMIUM = '/usr/bin/chromium';
const ROWS = '/api/tables/{tableIdOrCode}/rows';
const MISSING = `no Chromium at ${CHROMIUM}: apt-get install -y chromium (.ci/run installs it)`;
// As with PostgreSQL (test/run.mjs), CI=true makes a missing browser a failure, never a skip.
const skip = fs.existsSync(CHROMIUM) || process.env.CI === 'true' ? false : MISSING;

describe('openapi: /docs in headless Chromium', { skip }, () => {
  let t: ListeningApp;
  let base: string;
  let browser: Browser;

  before(async () => {
    assert.ok(fs.existsSync(CHROMIUM), MISSING);
    t = await startListening('sqlite');
    base = t.base;
    // No sandbox: the tests may run as root (CI), where Chromium's sandbox cannot start.
    browser = await chromium.launch({ executablePath: CHROMIUM, chromiumSandbox: false, args: ['--no-sandbox'] });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  it('renders every operation of the document, the rows routes included, from this origin only and without errors', async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    const elsewhere: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('requestfailed', (r) => problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`));
    // As offline: anything asked of another origin is refused, and named below.
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(`${base}/`)) return route.continue();
      elsewhere.push(url);
      return route.abort();
    });

    const answer = await page.goto(`${base}/docs`);
    assert.equal(answer?.status(), 200);
    // A page that fails to start says why: a blocked script or an error is among the problems.
    const shown = (what: Promise<void>) => what.catch((err: Error) => assert.fail(`${err.message}\n${[...problems, ...elsewhere].join('\n')}`));
    await shown(page.locator(`.opblock[id="operations-rows-listRows"] [data-path="${ROWS}"]`).waitFor({ timeout: 30_000 }));

    const doc = (await (await fetch(`${base}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    const operations = Object.values(doc.paths).flatMap((item) => Object.keys(item).filter((k) => k !== 'parameters'));
    assert.equal(await page.locator('.opblock').count(), operations.length, 'one block per operation');
    assert.match(await page.locator('.info .title').innerText(), /^Rowhouse/);
    // Swagger UI breaks paths with zero-width spaces after each slash; as read, the paths are whole.
    const text = (await page.locator('#swagger-ui').innerText()).replace(/\u200b/g, '');
    for (const path of [ROWS, `${ROWS}/{rowId}`, '/api/tables/{tableIdOrCode}/rows-bulk', '/api/tables/{tableIdOrCode}/rows-export', '/api/rows-batch', '/api/members', '/openapi.json']) {
      assert.ok(text.includes(path), `the page shows ${path}`);
    }

    // The reference is live: an operation opens on a click and shows its parameters.
    await page.locator('#operations-rows-listRows .opblock-summary-control').click();
    await shown(page.locator('#operations-rows-listRows .parameters-col_name', { hasText: 'pageSize' }).waitFor({ timeout: 10_000 }));
    assert.ok(await page.locator('.btn.authorize').isVisible(), 'the API key can be given (Authorize)');

    assert.deepEqual(elsewhere, [], 'requests to other origins');
    assert.deepEqual(problems, [], 'errors in the page');
  });
});
