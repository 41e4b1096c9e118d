import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { type TestApp, startApp } from '../support/harness.ts';

/**
 * SQLite: the write-ahead log is copied into the database file by the checkpoint worker
 * (store/sqlite/checkpoints.ts), not by the commits of requests. In WAL mode only a checkpoint
 * writes the database file itself; the main connection checkpoints only past 10,000 pages.
 */
describe('SQLite checkpoints in the background', () => {
  let t: TestApp;
  let file: string;

  before(async () => {
    t = await startApp('sqlite');
    file = t.scratch.url.slice('sqlite:'.length);
  });
  after(() => t.close());

  const stamp = () => {
    const s = fs.statSync(file);
    return `${s.size}:${s.mtimeMs}`;
  };

  it('the main connection leaves checkpoints to the worker until its log is long', async () => {
    const { rows } = await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(t.database.db);
    assert.equal(rows[0].wal_autocheckpoint, 10000);
  });

  it('a write reaches the database file soon after it commits, with no request waiting for it', async () => {
    assert.equal((await t.post('/api/tables', { code: 'w', name: 'w', fields: [{ code: 'x', type: 'text' }] })).status, 201);
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (let round = 0; round < 3; round++) {
      const before = stamp();
      const r = await t.post('/api/tables/w/rows-bulk', { data: Array.from({ length: 50 }, (_, i) => ({ values: { x: `round ${round} row ${i}` } })) });
      assert.equal(r.status, 201, r.text);
      // The log holds a few pages, far below the main connection's 10,000: only the worker writes the file.
      const deadline = Date.now() + 10_000;
      while (stamp() === before) {
        assert.ok(Date.now() < deadline, `round ${round}: the database file was not written within 10 s of the commit`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  });
});
