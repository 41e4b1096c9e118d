import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Sqlite from 'better-sqlite3';
import { READER_CACHE_KIB, READER_MMAP_REQUEST, requestReader } from '../../src/store/sqlite/connection.ts';

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

  it('keeps the pages it reads with pread in a page cache of up to 512 MiB, not 16 MB', () => {
    // Pages whose latest version is in the write-ahead log are read with pread, as pages past the map
    // are (a file of more than 2 GiB is too big for a test): 24 MiB of them, more than the build's 16 MB cache.
    const logged = path.join(dir, 'logged.db');
    const writer = new Sqlite(logged);
    writer.pragma('journal_mode = WAL');
    writer.pragma('wal_autocheckpoint = 0');
    writer.exec('create table big (x blob)');
    const insert = writer.prepare('insert into big values (randomblob(4000))');
    writer.transaction(() => {
      for (let i = 0; i < 6000; i++) insert.run();
    })();
    const conn = requestReader(Sqlite, logged);
    // Bytes this process has read with read(2) and pread(2) so far (Linux).
    const readBytes = () => Number(/^rchar: (\d+)$/m.exec(fs.readFileSync('/proc/self/io', 'utf8'))?.[1]);
    try {
      assert.equal(conn.pragma('cache_size', { simple: true }), -READER_CACHE_KIB);
      const total = conn.prepare('select sum(length(x)) from big').pluck();
      let before = readBytes();
      assert.equal(total.get(), 6000 * 4000);
      const first = readBytes() - before;
      before = readBytes();
      assert.equal(total.get(), 6000 * 4000);
      const again = readBytes() - before;
      assert.ok(first > 24_000_000, `the first read took ${first} bytes from the file`);
      assert.ok(again < 1_000_000, `the second read took ${again} bytes from the file again`);
    } finally {
      conn.close();
      writer.close();
    }
  });
});
