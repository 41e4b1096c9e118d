import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CompiledQuery } from 'kysely';
import { type Database, openDatabase, readRows } from '../../src/store/database.ts';

/**
 * SQLite's cached statements answer rows as objects made from better-sqlite3's arrays (database.ts
 * ObjectRows), their column names read once at prepare, except where the text has a `*`. The
 * objects must be what better-sqlite3 would have made, on the read connection and on the main
 * one (inside a transaction), and a `select *` must name the columns the table has now.
 */
describe('SQLite rows from cached statements', () => {
  let dir: string;
  let database: Database;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-sqlite-rows-'));
    database = await openDatabase(`sqlite:${path.join(dir, 'rows.db')}`);
    await database.db.executeQuery(CompiledQuery.raw('create table t (id text primary key, n real, j text, b integer)'));
    await database.db.executeQuery(CompiledQuery.raw(`insert into t values ('a', 1.5, '{"x":[1]}', 1), ('b', null, null, 0)`));
  });
  after(async () => {
    await database.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const read = (text: string, parameters: unknown[] = []) => readRows(database.db, CompiledQuery.raw(text, parameters));

  it('answers each row as an object of its columns, named as the statement names them, values as stored', async () => {
    const rows = await read('select id, n, j as json, b from t where id >= ? order by id', ['a']);
    assert.deepEqual(rows, [
      { id: 'a', n: 1.5, json: '{"x":[1]}', b: 1 },
      { id: 'b', n: null, json: null, b: 0 },
    ]);
    // The same statement again (cached), with other parameters.
    assert.deepEqual(await read('select id, n, j as json, b from t where id >= ? order by id', ['b']), [{ id: 'b', n: null, json: null, b: 0 }]);
    assert.deepEqual(await read('select id, n, j as json, b from t where id >= ? order by id', ['c']), []);
  });

  it('answers the rows a write returns, and reads in a transaction, on the main connection', async () => {
    const returned = await database.db.executeQuery(CompiledQuery.raw(`update t set n = 2 where id = 'b' returning id, n`));
    assert.deepEqual(returned.rows, [{ id: 'b', n: 2 }]);
    await database.db.transaction().execute(async (tx) => {
      await tx.executeQuery(CompiledQuery.raw(`insert into t (id, n) values ('c', 3)`));
      assert.deepEqual((await tx.executeQuery(CompiledQuery.raw('select id, n from t order by id'))).rows, [
        { id: 'a', n: 1.5 },
        { id: 'b', n: 2 },
        { id: 'c', n: 3 },
      ]);
    });
  });

  it('a cached select * names the columns the table has after it changed', async () => {
    const before = await read(`select * from t where id = 'a'`);
    assert.deepEqual(Object.keys(before[0]), ['id', 'n', 'j', 'b']);
    await database.db.executeQuery(CompiledQuery.raw('alter table t drop column b'));
    await database.db.executeQuery(CompiledQuery.raw('alter table t add column later text'));
    for (const run of [() => read(`select * from t where id = 'a'`), async () => (await database.db.executeQuery(CompiledQuery.raw(`select * from t where id = 'a'`))).rows]) {
      assert.deepEqual(await run(), [{ id: 'a', n: 1.5, j: '{"x":[1]}', later: null }]);
    }
  });
});
