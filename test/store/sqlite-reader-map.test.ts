import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Sqlite from 'better-sqlite3';
import { READER_MMAP_REQUEST, requestReader } from '../../src/store/sqlite/connection.ts';

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

  it('asks for the whole file, and maps as much of it as the build allows: 2 GiB or more', () => {
    const conn = requestReader(Sqlite, file);
    const probe = new Sqlite(file, { readonly: true });
    try {
      // SQLite cuts a larger setting to SQLITE_MAX_MMAP_SIZE: reading it back says what is mapped at most.
      probe.pragma(`mmap_size = ${2 ** 50}`);
      const buildAllows = probe.pragma('mmap_size', { simple: true }) as number;
      assert.ok(buildAllows >= 2 ** 31 - 2 ** 16);
      assert.equal(conn.pragma('mmap_size', { simple: true }), Math.min(READER_MMAP_REQUEST, buildAllows));
      // Files of up to 1 TiB are wholly mapped where the build allows it.
      assert.ok(READER_MMAP_REQUEST >= 2 ** 40);
      assert.deepEqual(conn.prepare('select id from t').pluck().all(), ['a']);
    } finally {
      probe.close();
      conn.close();
    }
  });
});
