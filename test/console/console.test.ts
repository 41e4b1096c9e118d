import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { TEST_KEY, uploadFile } from '../support/harness.ts';
import { until } from '../support/wire.ts';
import { type ConsoleSession, assertAccessible, cellSaved, gridCell, gridRow, noBrowser, signIn, startConsole } from './browser.ts';

/**
 * The browser console (issue 32, CONTRACT §15) in headless Chromium against a real listening
 * service, driven as a person does: controls found by role and label. One browser and one tab for
 * the whole file, the screens visited in order. The console is a client of the public API, which
 * the rest of the suite tests on both databases, so these tests run once, on SQLite: on PostgreSQL
 * they would drive the same page through the same API.
 */
const skip = noBrowser;

// The page functions below run in the browser; these are its globals they name (the tests' own
// TypeScript has Node's library, not the DOM's).
/* eslint-disable @typescript-eslint/no-explicit-any */
declare const document: any;
declare const localStorage: any;
declare const sessionStorage: any;
declare const DataTransfer: any;
declare const ClipboardEvent: any;

const XSS_VALUE = '<img src=x onerror=alert(1)>';
const XSS_NAME = '"><script>alert(2)</script>';

describe('console: tables and the grid in headless Chromium [sqlite]', { skip }, () => {
  let s: ConsoleSession;
  let page: Page;
  let grid: Locator;

  before(async () => {
    s = await startConsole();
    page = await s.newPage();
    grid = page.getByRole('grid');
  });
  after(async () => {
    await s?.close();
  });

  const row = (id: string) => gridRow(page, id);
  const cell = (id: string, column: number) => gridCell(page, id, column);
  const api = async (path: string) => (await s.t.get(path)).body;

  it('serves /console with a CSP that allows no inline script and no eval', async () => {
    const res = await fetch(`${s.base}/console`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    const csp = res.headers.get('content-security-policy') ?? '';
    const directives = new Map(csp.split(';').map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name, values]));
    assert.deepEqual(directives.get('default-src'), ["'none'"]);
    assert.deepEqual(directives.get('script-src'), ["'self'"], 'scripts from this origin only: no inline script, no eval');
    assert.deepEqual(directives.get('connect-src'), ["'self'"]);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
    const html = await res.text();
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script in the page');
    for (const src of html.matchAll(/(?:src|href)="([^"]+)"/g)) {
      const asset = await fetch(new URL(src[1], `${s.base}/console`));
      assert.equal(asset.status, 200, src[1]);
    }
    assert.equal((await fetch(`${s.base}/console/assets/..%2F..%2Fpackage.json`)).status, 404);
  });

  it('signs in with a key kept in sessionStorage only, never in a URL or localStorage', async () => {
    await page.goto(`${s.base}/console`);
    await page.getByRole('heading', { name: 'Rowhouse console' }).waitFor();
    await assertAccessible(page, 'the sign-in screen');
    await signIn(page, 'rh_not_a_key_at_all_0000000000000000000000');
    await page.getByRole('alert').filter({ hasText: 'refused this key' }).waitFor();
    await signIn(page);
    await page.getByRole('heading', { name: 'Tables' }).waitFor();
    assert.equal(await page.evaluate(() => localStorage.length), 0);
    assert.deepEqual(await page.evaluate(() => Object.values(sessionStorage)), [TEST_KEY]);
  });

  it('creates a table with fields of several types, and lists it', async () => {
    await page.getByRole('button', { name: 'New table' }).click();
    const dialog = page.getByRole('dialog', { name: 'New table' });
    await dialog.getByLabel('Table name').fill('Orders');
    await dialog.getByLabel('Table code').fill('orders');
    await dialog.getByLabel('Description').fill('What customers ordered');
    const fields: [string, string, string][] = [
      ['Title', 'title', 'text'],
      ['Amount', 'amount', 'number'],
      ['Status', 'status', 'select'],
      ['Due', 'due', 'date'],
      ['Paid', 'paid', 'boolean'],
      ['Meta', 'meta', 'record'],
      [XSS_NAME, 'odd', 'text'],
      ['Document', 'doc', 'file'],
    ];
    for (const [i, [name, code, type]] of fields.entries()) {
      if (i > 0) await dialog.getByRole('button', { name: 'Add field' }).click();
      const group = dialog.getByRole('group', { name: new RegExp(`^Field ${i + 1}`) });
      await group.getByLabel('Name').fill(name);
      await group.getByLabel('Code').fill(code);
      await group.getByLabel('Type').selectOption(type);
    }
    await dialog.getByRole('group', { name: /^Field 1/ }).getByLabel('Required').check();
    await dialog.getByRole('group', { name: /^Field 2/ }).getByLabel('Indexed').check();
    await dialog.getByRole('group', { name: /^Field 3/ }).getByLabel('Choices (one per line)').fill('new\nopen\nclosed');
    await assertAccessible(page, 'the new table dialog');
    await dialog.getByRole('button', { name: 'Create table' }).click();
    await page.getByRole('link', { name: 'Orders' }).waitFor();

    const table = await api('/api/tables/orders');
    assert.equal(table.description, 'What customers ordered');
    assert.deepEqual(
      table.fields.map((f: { code: string; type: string; name: string; required: boolean; options: object }) => [f.code, f.type, f.name, f.required, f.options]),
      [
        ['title', 'text', 'Title', true, {}],
        ['amount', 'number', 'Amount', false, { indexed: true }],
        ['status', 'select', 'Status', false, { choices: ['new', 'open', 'closed'] }],
        ['due', 'date', 'Due', false, {}],
        ['paid', 'boolean', 'Paid', false, {}],
        ['meta', 'record', 'Meta', false, {}],
        ['odd', 'text', XSS_NAME, false, {}],
        ['doc', 'file', 'Document', false, {}],
      ],
    );
    const listed = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'Orders' }) });
    assert.match(await listed.innerText(), /orders\s+8\s+What customers ordered/);
    await assertAccessible(page, 'the tables screen');
  });

  it('shows rows with a renderer per type, and values and field names as text', async () => {
    const file = await uploadFile(s.t, 'orders', 'r1', 'the report', 'application/pdf');
    const seeded = await s.t.post('/api/tables/orders/rows-bulk', {
      data: [
        { id: 'r1', values: { title: 'First', amount: 5, status: 'open', due: '2026-01-31', paid: true, meta: { a: 1 }, doc: { id: file, name: 'report "final".pdf' } } },
        { id: 'r2', values: { title: XSS_VALUE, amount: 20, status: 'new', paid: false, odd: XSS_VALUE } },
        { id: 'r3', values: { title: 'Third', amount: null } },
        { id: 'r4', values: { title: 'Fourth', amount: 12 } },
      ],
    });
    assert.equal(seeded.status, 201, seeded.text);
    await page.getByRole('link', { name: 'Orders' }).click();
    await page.getByRole('heading', { name: 'Orders', level: 1 }).waitFor();
    await row('r4').waitFor();
    assert.equal(await grid.getByRole('columnheader', { name: XSS_NAME }).count(), 1, 'the field name is a header, as text');
    assert.equal(await cell('r1', 3).innerText(), '5');
    assert.equal(await cell('r1', 4).innerText(), 'open');
    assert.equal(await cell('r1', 4).locator('.chip').count(), 1, 'a select value is a chip');
    assert.equal(await cell('r1', 5).innerText(), '2026-01-31');
    assert.equal(await cell('r1', 6).innerText(), '✓ true');
    assert.equal(await cell('r1', 7).innerText(), '{"a":1}');
    const download = cell('r1', 9).getByRole('link', { name: 'report "final".pdf', exact: true });
    assert.equal(await download.getAttribute('download'), 'report "final".pdf');
    assert.match((await download.getAttribute('href')) ?? '', new RegExp(`/files/[^/]+/r1/${file}\\?`));
    assert.equal(await cell('r2', 2).innerText(), XSS_VALUE);
    assert.equal(await cell('r2', 8).innerText(), XSS_VALUE);
    assert.equal(await page.locator('main img, main script').count(), 0, 'no element made from a value or a name');
    await assertAccessible(page, 'the grid');
    // README's picture of the grid: ROWHOUSE_CONSOLE_SCREENSHOT=docs/console-grid.png node test/run.mjs test/console/console.test.ts
    if (process.env.ROWHOUSE_CONSOLE_SCREENSHOT) await page.screenshot({ path: process.env.ROWHOUSE_CONSOLE_SCREENSHOT });
  });

  it('adds a row through the row panel, and edits a cell in place', async () => {
    await page.getByRole('button', { name: 'Add row' }).click();
    const panel = page.getByRole('dialog', { name: 'New row in Orders' });
    await panel.getByLabel('Id (optional)').fill('r5');
    await panel.getByLabel('Title (required)').fill('Fifth');
    await panel.getByLabel('Amount').fill('7.5');
    await panel.getByLabel('Status').selectOption('closed');
    await assertAccessible(page, 'the row panel');
    await panel.getByRole('button', { name: 'Add row' }).click();
    await row('r5').waitFor();
    const r5 = await api('/api/tables/orders/rows/r5');
    assert.deepEqual([r5.values.title, r5.values.amount, r5.values.status], ['Fifth', 7.5, 'closed']);

    // Keyboard: the cell is reached and edited without the mouse after the first click.
    await cell('r1', 2).click();
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('Enter');
    const editor = page.getByLabel('Amount, row r1');
    await editor.fill('42');
    await editor.press('Enter');
    await cellSaved(cell('r1', 3), /^42$/);
    assert.equal((await api('/api/tables/orders/rows/r1')).values.amount, 42);
  });

  it('shows a 400’s details on the cell at fault, and leaves the row unchanged', async () => {
    await cell('r4', 3).click();
    await page.keyboard.press('F2');
    const editor = page.getByLabel('Amount, row r4');
    await editor.fill('lots');
    await editor.press('Enter');
    const bad = cell('r4', 3);
    await bad.filter({ hasText: 'must be' }).waitFor();
    assert.equal(await bad.getAttribute('aria-invalid'), 'true');
    assert.match(await bad.innerText(), /^lots\n.*must be a finite number|^lots\n.*must be/);
    assert.equal((await api('/api/tables/orders/rows/r4')).values.amount, 12);
    // Typing a good value clears it.
    await bad.click();
    await page.keyboard.press('Enter');
    await page.getByLabel('Amount, row r4').fill('13');
    await page.getByLabel('Amount, row r4').press('Enter');
    await cellSaved(cell('r4', 3), /^13$/);
    assert.equal(await cell('r4', 3).getAttribute('aria-invalid'), null);
  });

  it('pastes a block of tab-separated cells as one batch, and copies cells out', async () => {
    await cell('r3', 2).click();
    const batches: string[] = [];
    page.on('request', (r) => {
      if (r.url().endsWith('/api/rows-batch')) batches.push(r.postData() ?? '');
    });
    // From r3's Title: two rows of Title, Amount, Status; the block goes one row past r5, the last, which adds a row.
    const block = 'Third v2\t3\tnew\nFourth v2\t4\topen\nFifth v2\t5\tclosed\nSixth\t6\tnew\n';
    await cell('r3', 2).evaluate((el, text) => {
      const data = new DataTransfer();
      data.setData('text/plain', text);
      el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    }, block);
    await page.getByRole('status').filter({ hasText: 'Pasted 4 rows: 3 updated, 1 added.' }).waitFor();
    assert.equal(batches.length, 1, 'one request');
    const rows = (await s.t.get('/api/tables/orders/rows', { query: { sort: [{ createdAt: { direction: 'asc', nulls: 'nullsLast' } }] } })).body.data;
    assert.deepEqual(
      rows.map((r: { values: Record<string, unknown> }) => [r.values.title, r.values.amount, r.values.status]),
      [
        ['First', 42, 'open'],
        [XSS_VALUE, 20, 'new'],
        ['Third v2', 3, 'new'],
        ['Fourth v2', 4, 'open'],
        ['Fifth v2', 5, 'closed'],
        ['Sixth', 6, 'new'],
      ],
    );
    // Copy: r1's Title to r2's Amount, a 2×2 block chosen with Shift and the arrows.
    await cell('r1', 2).click();
    await page.keyboard.press('Shift+ArrowRight');
    await page.keyboard.press('Shift+ArrowDown');
    const copied = await cell('r2', 3).evaluate((el) => {
      const data = new DataTransfer();
      el.dispatchEvent(new ClipboardEvent('copy', { clipboardData: data, bubbles: true, cancelable: true }));
      return data.getData('text/plain');
    });
    assert.equal(copied, `First\t42\n${XSS_VALUE}\t20`);
  });

  it('sorts from a column header with null placement, and filters; the view is in the URL and opens in another tab', async () => {
    /** The ids of the rows drawn, top to bottom. */
    const ids = (p: Page = page) => p.getByRole('grid').getByRole('row').evaluateAll((rows) => rows.slice(1).map((r) => r.querySelector('.id-cell span')?.textContent ?? ''));
    /** The ids the API lists for a view, in its order. */
    const listed = async (query: Record<string, unknown>) => (await s.t.get('/api/tables/orders/rows', { query })).body.data.map((r: { id: string }) => r.id);
    await s.t.patch('/api/tables/orders/rows/r3', { values: { amount: null } });
    await page.getByRole('button', { name: 'Reload' }).click();
    const amountHeader = grid.getByRole('columnheader', { name: /^Amount/ });
    await amountHeader.getByRole('button', { name: /^Amount/ }).click();
    await page.waitForURL(/sort=/);
    assert.deepEqual(JSON.parse(new URL(page.url()).searchParams.get('sort') as string), [{ amount: { direction: 'asc', nulls: 'nullsLast' } }]);
    assert.equal(await amountHeader.getAttribute('aria-sort'), 'ascending');
    const ascending = await listed({ sort: [{ amount: { direction: 'asc', nulls: 'nullsLast' } }] });
    await page.waitForFunction((n) => document.querySelectorAll('[role=grid] [role=row]').length === n + 1, ascending.length);
    assert.deepEqual(await ids(), ascending);
    assert.equal(ascending.at(-1), 'r3', 'the empty amount last');

    await amountHeader.getByRole('button', { name: 'Empty values of Amount: last' }).click();
    await page.waitForURL(/nullsFirst/);
    await amountHeader.getByRole('button', { name: 'Empty values of Amount: first' }).waitFor();
    const nullsFirst = await listed({ sort: [{ amount: { direction: 'asc', nulls: 'nullsFirst' } }] });
    await page.waitForFunction((first) => document.querySelector('[role=grid] [role=rowgroup] + [role=rowgroup] .id-cell span')?.textContent === first, nullsFirst[0]);
    assert.deepEqual(await ids(), nullsFirst);
    assert.equal(nullsFirst[0], 'r3', 'the empty amount first');
    await amountHeader.getByRole('button', { name: /^Amount/ }).click();
    await page.waitForURL(/desc/);
    assert.equal(await amountHeader.getAttribute('aria-sort'), 'descending');

    // Filter: Amount > 4 and not Status = closed.
    await page.getByRole('button', { name: /^Filter/ }).click();
    const filter = page.getByRole('form', { name: 'Filter' });
    await filter.getByRole('button', { name: 'Add condition' }).last().click();
    const c1 = filter.getByRole('group', { name: 'Condition 1', exact: true });
    await c1.getByLabel('Field').selectOption({ label: 'Amount' });
    await c1.getByLabel('Operator').selectOption({ label: 'greater than' });
    await c1.getByLabel('Value').fill('4');
    await filter.getByRole('button', { name: 'Add group' }).click();
    const g = filter.getByRole('group', { name: 'Group 1.2', exact: true });
    await g.getByLabel('Not (rows that do not match)').check();
    const c2 = g.getByRole('group', { name: 'Condition 1.2.1', exact: true });
    await c2.getByLabel('Field').selectOption({ label: 'Status' });
    await c2.getByLabel('Value').selectOption('closed');
    await assertAccessible(page, 'the filter builder');
    await filter.getByRole('button', { name: 'Apply filter' }).click();
    await page.waitForURL(/filter=/);
    const filterParam = JSON.parse(new URL(page.url()).searchParams.get('filter') as string);
    assert.deepEqual(filterParam, { _and: [{ values: { amount: { _gt: 4 } } }, { _not: { values: { status: { _eq: 'closed' } } } }] });
    await row('r5').waitFor({ state: 'detached' });
    const expected = await listed({ filter: filterParam, sort: [{ amount: { direction: 'desc', nulls: 'nullsFirst' } }] });
    // The grid empties while the filtered page loads (r5 goes first): wait for the page to be drawn, then compare.
    await until('the filtered page drawn', async () => JSON.stringify(await ids()) === JSON.stringify(expected), 5000).catch(() => undefined);
    assert.deepEqual(await ids(), expected);
    assert.ok(expected.length >= 2 && !expected.includes('r5'));

    // Shared: another tab has no key (sessionStorage is per tab), signs in, and sees the same view.
    const other = await s.newPage();
    await other.goto(page.url());
    await signIn(other);
    await other.getByRole('grid').getByRole('row').nth(expected.length).waitFor();
    assert.deepEqual(await ids(other), expected);
    assert.equal(await other.getByRole('group', { name: 'Condition 1', exact: true }).getByLabel('Value').inputValue(), '4', 'the filter builder shows the shared filter');
    await other.close();
    await filter.getByRole('button', { name: 'Clear filter' }).click();
    await row('r5').waitFor();
  });

  it('selects rows and deletes them after a confirmation naming them', async () => {
    await row('r1').getByRole('checkbox', { name: 'Select row r1' }).check();
    await row('r2').getByRole('checkbox', { name: 'Select row r2' }).check();
    await page.getByRole('button', { name: 'Delete selected rows (2)' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete 2 rows?' });
    assert.match(await dialog.innerText(), /r1, r2/);
    await assertAccessible(page, 'the delete rows dialog');
    await dialog.getByRole('button', { name: 'Delete rows' }).click();
    await row('r1').waitFor({ state: 'detached' });
    assert.equal((await s.t.get('/api/tables/orders/rows/r1')).status, 404);
    assert.equal((await s.t.get('/api/tables/orders/rows/r2')).status, 404);
  });

  it('works from the keyboard alone: typing edits, Tab saves and moves, Escape cancels, Delete empties, Space selects', async () => {
    await cell('r4', 2).click();
    await page.keyboard.press('X');
    const title = page.getByLabel('Title, row r4');
    await title.waitFor();
    await page.keyboard.type('yz');
    await page.keyboard.press('Tab');
    await cellSaved(cell('r4', 2), /^Xyz$/);
    assert.equal((await api('/api/tables/orders/rows/r4')).values.title, 'Xyz');
    // Tab moved to Amount: Escape leaves it as it was.
    await page.keyboard.press('Enter');
    await page.getByLabel('Amount, row r4').fill('999');
    await page.keyboard.press('Escape');
    await page.getByLabel('Amount, row r4').waitFor({ state: 'detached' });
    assert.equal((await api('/api/tables/orders/rows/r4')).values.amount, 4);
    // Right to Status, Delete empties it.
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('Delete');
    for (let i = 0; i < 50 && (await api('/api/tables/orders/rows/r4')).values.status !== null; i++) await page.waitForTimeout(50);
    assert.equal((await api('/api/tables/orders/rows/r4')).values.status, null);
    // Home, then Space selects the row and again lets it go.
    await page.keyboard.press('Home');
    await page.keyboard.press(' ');
    await page.getByRole('button', { name: 'Delete selected rows (1)' }).waitFor();
    assert.equal(await row('r4').getAttribute('aria-selected'), 'true');
    await page.keyboard.press(' ');
    await page.getByRole('button', { name: 'Delete selected rows (0)' }).waitFor();
  });

  it('reads a long table page by page as it scrolls, drawing only the rows in view', async () => {
    const made = await s.t.post('/api/tables', { code: 'many', name: 'Many', fields: [{ code: 'n', type: 'number' }] });
    assert.equal(made.status, 201, made.text);
    for (let start = 0; start < 1000; start += 500) {
      const data = Array.from({ length: 500 }, (_v, i) => ({ id: `m${String(start + i).padStart(4, '0')}`, values: { n: start + i } }));
      assert.equal((await s.t.post('/api/tables/many/rows-bulk', { data })).status, 201);
    }
    const pages: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/api/tables/many/rows')) pages.push(r.url());
    });
    await page.goto(`${s.base}/console?table=many`);
    await page.getByRole('status').filter({ hasText: '200 rows loaded, more below.' }).waitFor();
    assert.equal(pages.length, 1, 'the first page only');
    const drawn = await grid.getByRole('row').count();
    assert.ok(drawn < 60, `${drawn} rows drawn of 200 held`);
    for (let i = 0; i < 40 && !(await page.getByRole('status').filter({ hasText: '1000 rows.' }).count()); i++) {
      await grid.evaluate((el) => el.scrollTo(0, el.scrollHeight));
      await page.waitForTimeout(100);
    }
    await page.getByRole('status').filter({ hasText: '1000 rows.' }).waitFor();
    await grid.evaluate((el) => el.scrollTo(0, el.scrollHeight));
    assert.equal(pages.length, 5, 'five pages of 200, each by the nextUrl of the one before');
    assert.ok(pages.slice(1).every((u) => new URL(u).searchParams.has('cursor')));
    await row('m0999').waitFor();
    assert.ok((await grid.getByRole('row').count()) < 60);
  });

  it('edits a table, then deletes it after a confirmation naming what is lost', async () => {
    await page.getByRole('button', { name: 'Edit table' }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit table Many' });
    await dialog.getByLabel('Table name').fill('Many numbers');
    await dialog.getByLabel('Description').fill('A thousand of them');
    await dialog.getByRole('button', { name: 'Add field' }).click();
    const g = dialog.getByRole('group', { name: /^Field 2/ });
    await g.getByLabel('Name').fill('Label');
    await g.getByLabel('Code').fill('label');
    await dialog.getByRole('button', { name: 'Save table' }).click();
    await page.getByRole('heading', { name: 'Many numbers', level: 1 }).waitFor();
    const table = await api('/api/tables/many');
    assert.equal(table.description, 'A thousand of them');
    assert.deepEqual(table.fields.map((f: { code: string }) => f.code), ['n', 'label']);

    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Tables' }).click();
    await page.getByRole('button', { name: 'Delete table Many numbers' }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete table Many numbers?' });
    assert.match(await confirm.innerText(), /every row in it, every file attached to its rows, and its 2 fields: n, Label/);
    await confirm.getByRole('button', { name: 'Delete table Many numbers' }).click();
    await page.getByRole('link', { name: 'Many numbers' }).waitFor({ state: 'detached' });
    assert.equal((await s.t.get('/api/tables/many')).status, 404);
  });

  it('never put the key in a URL or localStorage, asked nothing of another origin, and had no error', async () => {
    assert.ok(s.urls.length > 20);
    assert.deepEqual(s.urls.filter((u) => u.includes(TEST_KEY) || u.includes(encodeURIComponent(TEST_KEY))), []);
    assert.equal(await page.evaluate(() => localStorage.length), 0);
    assert.deepEqual(s.problems.filter((p) => !p.includes('the server responded with a status of 400') && !p.includes('status of 401')), []);
  });
});
