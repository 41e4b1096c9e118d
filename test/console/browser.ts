import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { type Browser, type Locator, type Page, chromium } from 'playwright-core';
import { type AppOptions, TEST_KEY, type TestApp, startApp } from '../support/harness.ts';
import { freshConsoleBuild } from './console-build.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const MISSING = `no Chromium at ${CHROMIUM}: apt-get install -y chromium (.ci/run installs it)`;
/** As with PostgreSQL (test/run.mjs), CI=true makes a missing browser a failure, never a skip. */
export const noBrowser = fs.existsSync(CHROMIUM) || process.env.CI === 'true' ? false : MISSING;

const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface ConsoleSession {
  t: TestApp;
  base: string;
  browser: Browser;
  /** Every URL the pages asked for, and every problem they had (errors, blocked scripts, other origins). */
  urls: string[];
  problems: string[];
  /** A new tab, watched, offline but for the service's own origin (and `origins`). */
  newPage(): Promise<Page>;
  close(): Promise<void>;
}

export interface ConsoleOptions {
  /** The service's configuration beside the tests' own (startApp's env). */
  env?: Record<string, string>;
  /** startApp's app options (e.g. a quicker webhook poll). */
  app?: AppOptions;
  /** Origins besides the service's that the pages may reach (an S3 server's). */
  origins?: string[];
}

/** The service on SQLite, listening, its console built, and one headless Chromium. */
export async function startConsole(options: ConsoleOptions = {}): Promise<ConsoleSession> {
  assert.ok(fs.existsSync(CHROMIUM), MISSING);
  await freshConsoleBuild();
  const t = await startApp('sqlite', options.env ?? {}, options.app ?? {});
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  // No sandbox: the tests may run as root (CI), where Chromium's sandbox cannot start.
  const browser = await chromium.launch({ executablePath: CHROMIUM, chromiumSandbox: false, args: ['--no-sandbox'] });
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const urls: string[] = [];
  const problems: string[] = [];
  return {
    t,
    base,
    browser,
    urls,
    problems,
    async newPage() {
      const page = await context.newPage();
      page.on('console', (m) => {
        if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
      });
      page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
      page.on('dialog', (d) => {
        problems.push(`a ${d.type()} dialog opened: ${d.message()}`);
        void d.dismiss();
      });
      await page.route('**/*', (route) => {
        const url = route.request().url();
        urls.push(url);
        if ([base, ...(options.origins ?? [])].some((origin) => url.startsWith(`${origin}/`))) return route.continue();
        problems.push(`asked another origin: ${url}`);
        return route.abort();
      });
      return page;
    },
    async close() {
      await browser.close();
      await t.close();
    },
  };
}

/** Signs in on the sign-in form, as a person does. */
export async function signIn(page: Page, key = TEST_KEY): Promise<void> {
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

interface AxeResult {
  violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[];
}

/** axe-core run in the page: no serious or critical violation. */
export async function assertAccessible(page: Page, screen: string): Promise<void> {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern (an inline script tag would be refused).
  await page.evaluate(axeSource);
  const result = (await page.evaluate('axe.run(document, { resultTypes: ["violations"] })')) as AxeResult;
  const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(
    bad.map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => JSON.stringify(n.target)).join(', ')})`),
    [],
    `accessibility of ${screen}`,
  );
}

/** The grid's row showing the row with this id (found by its "Open row" button). */
export const gridRow = (page: Page, id: string): Locator =>
  page.getByRole('grid').getByRole('row').filter({ has: page.getByRole('button', { name: `Open row ${id}`, exact: true }) });

/** A cell of that row: column 0 is the checkbox, 1 the id, then the table's fields in order. */
export const gridCell = (page: Page, id: string, column: number): Locator => gridRow(page, id).getByRole('gridcell').nth(column);

/**
 * Waits until the cell shows `text` as saved: a cell being written shows the text typed at once,
 * marked aria-busy until the service has answered; only then does the service hold it.
 */
export async function cellSaved(cell: Locator, text: RegExp): Promise<void> {
  await cell.filter({ hasText: text }).and(cell.page().locator('[role="gridcell"]:not([aria-busy])')).waitFor();
}

/** What describes an element to a screen reader: the text of the elements its aria-describedby names, in order. */
export async function describedBy(element: Locator): Promise<string> {
  const ids = ((await element.getAttribute('aria-describedby')) ?? '').split(/\s+/).filter((id) => id !== '');
  assert.ok(ids.length > 0, 'described by nothing');
  const texts: string[] = [];
  for (const id of ids) texts.push(await element.page().locator(`[id="${id}"]`).innerText());
  return texts.join(' ');
}
