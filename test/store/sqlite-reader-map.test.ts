import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Sqlite from 'better-sqlite3';
import { READER_MMAP_BYTES, requestReader } from '../../src/store/sqlite/connection.ts';

/**
 * SQLite's request reader maps the database file, all of it up to the build's limit (connection.ts):
 * a table past the first 256 MiB of a file was read by pread and cost more per row the bigger the
 * file grew (docs/decisions.md, Read path per request, growth).
 */
describe('SQLite request reader: the map', () => {
  let dir: string;
  let file: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-reader-map-'));
    file = path.join(dir, 'map.db');
    const db = new Sqlite(file);
    db.pragma('journal_mode = WAL');
    db.exec("create table t (id text primary key); insert into t values ('a')");
    db.close();
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('covers 2 GiB, what this build of SQLite allows, not less', () => {
    const conn = requestReader(Sqlite, file);
    try {
      // SQLite cuts a larger setting to SQLITE_MAX_MMAP_SIZE: reading it back says what is mapped at most.
      assert.equal(conn.pragma('mmap_size', { simple: true }), READER_MMAP_BYTES);
      assert.ok(READER_MMAP_BYTES >= 2 ** 31 - 2 ** 16);
      assert.deepEqual(conn.prepare('select id from t').pluck().all(), ['a']);
    } finally {
      conn.close();
    }
  });
});
