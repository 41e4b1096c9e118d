import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { after, before, it } from 'node:test';
import { type TestApp, startApp } from '../support/harness.ts';

/**
 * Issue 17 (reliability), item 4: SQLite writer contention reaches no client. Another process (the
 * CLI, a backup tool, a second server by mistake) holds the database's write lock for a while;
 * single, bulk and batch writes sent meanwhile wait for it (busy_timeout) and are answered 2xx,
 * each written once, with its change entry.
 */
const HOLD_MS = 700;

let t: TestApp;
before(async () => {
  t = await startApp('sqlite');
});
after(() => t?.close());

/** A process that takes the write lock, writes a row of its own, keeps the lock `ms`, then commits; resolves once it holds the lock. */
function holdWriteLock(file: string, ms: number): { held: Promise<void>; done: Promise<number | null> } {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const script = `
    const Database = require(${JSON.stringify(driver)});
    const db = new Database(${JSON.stringify(file)});
    db.pragma('busy_timeout = 5000');
    db.exec('begin immediate');
    db.exec("create table if not exists other_process (n integer)");
    db.exec('insert into other_process values (1)');
    process.stdout.write('held\\n');
    setTimeout(() => { db.exec('commit'); db.close(); }, ${ms});`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const held = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => d.toString().includes('held') && resolve());
    child.once('exit', (code) => reject(new Error(`the lock holder exited (${code}) before holding the lock`)));
  });
  const done = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { held, done };
}

it('writes wait while another process holds the write lock, and are all answered 2xx', async () => {
  assert.ok(t.scratch.url.startsWith('sqlite:'));
  const file = t.scratch.url.slice('sqlite:'.length);
  assert.equal((await t.post('/api/tables', { code: 'w', name: 'W', fields: [{ code: 'n', type: 'number' }] })).status, 201);
  assert.equal((await t.post('/api/tables/w/rows', { id: 'p', values: { n: 0 } })).status, 201);

  const holder = holdWriteLock(file, HOLD_MS);
  await holder.held;
  const started = Date.now();
  const answers = await Promise.all([
    t.post('/api/tables/w/rows', { id: 'single', values: { n: 1 } }),
    t.patch('/api/tables/w/rows/p', { values: { n: 2 } }),
    t.post('/api/tables/w/rows-bulk', { data: Array.from({ length: 50 }, (_, k) => ({ id: `b${k}`, values: { n: k } })) }),
    t.post('/api/rows-batch', { operations: [{ type: 'create', tableId: 'w', id: 'batch', values: { n: 3 } }, { type: 'delete', tableId: 'w', id: 'b0' }] }),
  ]);
  const waited = Date.now() - started;
  assert.equal(await holder.done, 0);
  for (const a of answers) assert.ok(a.status >= 200 && a.status < 300, `a write answered ${a.status}: ${JSON.stringify(a.body)}`);
  // They did wait for the lock: nothing of theirs could commit before the other process did.
  assert.ok(waited >= HOLD_MS / 2, `the writes were answered after ${waited} ms`);

  const rows = await t.get('/api/tables/w/rows?pageSize=200');
  assert.deepEqual(rows.body.data.map((r: { id: string }) => r.id).sort(), ['batch', 'p', 'single', ...Array.from({ length: 49 }, (_, k) => `b${k + 1}`)].sort());
  const changes = await t.get('/api/tables/w/changes?limit=1000');
  // p's create, then one entry for each write: single, patch, 50 bulk creates, batch create and delete.
  assert.equal(changes.body.data.length, 1 + 1 + 1 + 50 + 2);
});
