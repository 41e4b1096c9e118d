import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import Sqlite from 'better-sqlite3';
import { CompiledQuery } from 'kysely';
import { inTransaction } from '../../src/store/database.ts';
import { type SqliteAdapter, openSqlite } from '../../src/store/sqlite/open-sqlite.ts';
import type { WriteNow } from '../../src/store/sqlite/group-commit.ts';

/**
 * SQLite's writeNow commits the single-row writes of one turn of the event loop together
 * (sqlite/group-commit.ts groupCommits): each in a savepoint of its own, answered only after the one commit.
 */
describe('SQLite group commit (writeNow)', () => {
  let dir: string;
  let file: string;
  let database: SqliteAdapter;
  /** Another connection to the file: it sees only what has committed. */
  let observer: Sqlite.Database;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-group-commit-'));
    file = path.join(dir, 'g.db');
    database = openSqlite(Sqlite, file);
    await database.db.executeQuery(CompiledQuery.raw('create table t (id text primary key, n integer not null)'));
    observer = new Sqlite(file, { readonly: true });
  });
  beforeEach(async () => {
    await database.db.executeQuery(CompiledQuery.raw('delete from t'));
  });
  after(async () => {
    observer.close();
    await database.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const writeNow: WriteNow = (work, atomic) => database.writeNow(work, atomic);
  const insert = (id: string, n: number) => writeNow((run) => run('insert into t (id, n) values (?, ?) returning id', [id, n]));
  const committed = () => observer.prepare('select id, n from t order by id').all();

  it('commits the writes of one turn together, after the last of them ran, and answers each', async () => {
    const seen: unknown[] = [];
    const first = insert('a', 1);
    const second = writeNow((run) => {
      // The first write ran in this transaction and has not committed.
      seen.push(run('select id from t', []), committed());
      return run('insert into t (id, n) values (?, ?) returning id', ['b', 2]);
    });
    // Neither is answered before the commit, and the commit comes after both ran.
    let answered = false;
    void first.then(() => {
      answered = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(answered, false);
    assert.deepEqual(await first, [{ id: 'a' }]);
    assert.deepEqual(await second, [{ id: 'b' }]);
    assert.deepEqual(seen, [[{ id: 'a' }], []]);
    assert.deepEqual(committed(), [{ id: 'a', n: 1 }, { id: 'b', n: 2 }]);
  });

  it('rolls a write that throws back alone: the others of its group commit', async () => {
    const results = await Promise.allSettled([
      insert('a', 1),
      writeNow((run) => {
        run('insert into t (id, n) values (?, ?)', ['x', 9]);
        return run('insert into t (id, n) values (?, ?)', ['a', 2]); // the id is taken: throws
      }),
      insert('b', 3),
    ]);
    assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
    assert.match(String((results[1] as PromiseRejectedResult).reason), /UNIQUE/);
    assert.deepEqual(committed(), [{ id: 'a', n: 1 }, { id: 'b', n: 3 }]);
  });

  it('fails every write of the group when the transaction itself is lost, and writes on afterwards', async () => {
    const results = await Promise.allSettled([
      insert('a', 1),
      writeNow((run) => {
        run('rollback', []); // as SQLite does on a full disk
        throw new Error('disk full');
      }),
      insert('b', 2),
    ]);
    assert.deepEqual(results.map((r) => r.status), ['rejected', 'rejected', 'rejected']);
    for (const r of results) assert.match(String((r as PromiseRejectedResult).reason), /disk full/);
    assert.deepEqual(committed(), []);
    assert.deepEqual(await insert('c', 3), [{ id: 'c' }]);
    assert.deepEqual(committed(), [{ id: 'c', n: 3 }]);
  });

  it('runs one-statement writes without a savepoint: one that fails is backed out alone, and what they leave runs before the commit', async () => {
    const steps: unknown[] = [];
    const oneInsert = (id: string, n: number) =>
      writeNow((run, group) => {
        const rows = run('insert into t (id, n) values (?, ?) returning id', [id, n]);
        // Left to the end of the group: the writes of the group have all run, and nothing has committed.
        group.beforeCommit((r) => steps.push([id, r('select count(*) as n from t', []), committed().length]));
        return rows;
      }, true);
    await insert('taken', 0);
    const results = await Promise.allSettled([oneInsert('a', 1), oneInsert('taken', 2), oneInsert('b', 3)]);
    assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
    assert.match(String((results[1] as PromiseRejectedResult).reason), /UNIQUE/);
    assert.deepEqual(steps, [['a', [{ n: 3 }], 1], ['b', [{ n: 3 }], 1]]);
    assert.deepEqual(committed(), [{ id: 'a', n: 1 }, { id: 'b', n: 3 }, { id: 'taken', n: 0 }]);
  });

  it('fails every write of the group when what they left for its end fails, or when a one-statement write throws after its statement', async () => {
    const results = await Promise.allSettled([
      insert('a', 1),
      writeNow((run, group) => {
        group.beforeCommit(() => {
          throw new Error('the entries could not be written');
        });
        return run('insert into t (id, n) values (?, ?)', ['b', 2]);
      }, true),
    ]);
    assert.deepEqual(results.map((r) => r.status), ['rejected', 'rejected']);
    for (const r of results) assert.match(String((r as PromiseRejectedResult).reason), /could not be written/);
    assert.deepEqual(committed(), []);
    const after = await Promise.allSettled([
      insert('c', 3),
      writeNow((run) => {
        run('insert into t (id, n) values (?, ?)', ['d', 4]);
        throw new Error('failed after its statement');
      }, true),
      writeNow((run) => {
        run('insert into t (id, n) values (?, ?)', ['e', 5]);
        return run('insert into t (id, n) values (?, ?)', ['f', 6]);
      }, true),
    ]);
    assert.deepEqual(after.map((r) => r.status), ['rejected', 'rejected', 'rejected']);
    assert.deepEqual(committed(), []);
    assert.deepEqual(await insert('g', 7), [{ id: 'g' }]);
    assert.deepEqual(committed(), [{ id: 'g', n: 7 }]);
  });

  it('runs a write with an undo without a savepoint: when it throws, its undo backs it out alone; an undo that throws fails the group', async () => {
    await insert('taken', 0);
    /** Inserts `first`, then `second`; the undo deletes `first` once it was inserted. */
    const pair = (first: string, second: string, undo?: () => void) => {
      let inserted = false;
      return writeNow(
        (run) => {
          run('insert into t (id, n) values (?, ?)', [first, 1]);
          inserted = true;
          return run('insert into t (id, n) values (?, ?) returning id', [second, 2]);
        },
        {
          undo(run) {
            undo?.();
            if (inserted) run('delete from t where id = ?', [first]);
          },
        },
      );
    };
    const results = await Promise.allSettled([insert('a', 1), pair('b', 'taken'), pair('taken', 'c'), pair('d', 'e')]);
    assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    for (const i of [1, 2]) assert.match(String((results[i] as PromiseRejectedResult).reason), /UNIQUE/);
    assert.deepEqual(committed(), [{ id: 'a', n: 1 }, { id: 'd', n: 1 }, { id: 'e', n: 2 }, { id: 'taken', n: 0 }]);
    const failing = await Promise.allSettled([
      insert('f', 1),
      pair('g', 'taken', () => {
        throw new Error('cannot back it out');
      }),
    ]);
    assert.deepEqual(failing.map((r) => r.status), ['rejected', 'rejected']);
    assert.match(String((failing[0] as PromiseRejectedResult).reason), /cannot back it out/);
    assert.deepEqual(committed(), [{ id: 'a', n: 1 }, { id: 'd', n: 1 }, { id: 'e', n: 2 }, { id: 'taken', n: 0 }]);
  });

  it('waits for a transaction of the query builder, and writes after it in order', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tx = inTransaction(database, async (t) => {
      await t.executeQuery(CompiledQuery.raw('insert into t (id, n) values (?, ?)', ['tx', 1]));
      await held;
    });
    await new Promise((resolve) => setImmediate(resolve));
    const write = writeNow((run) => run('select n from t where id = ?', ['tx']));
    await new Promise((resolve) => setTimeout(resolve, 20));
    release();
    await tx;
    // The write ran after the transaction committed, and saw its row.
    assert.deepEqual(await write, [{ n: 1 }]);
  });

  it('makes a transaction of the query builder begun while a group runs wait for its commit, and see its writes', async () => {
    const write = insert('g', 1);
    // Begun in the same turn, while the group's transaction is open (it commits at the turn's end).
    const tx = inTransaction(database, async (t) => (await t.executeQuery(CompiledQuery.raw('select id, n from t order by id'))).rows);
    const plain = database.db.executeQuery(CompiledQuery.raw('select count(*) as n from t'));
    assert.deepEqual(await write, [{ id: 'g' }]);
    assert.deepEqual(await tx, [{ id: 'g', n: 1 }]);
    assert.deepEqual((await plain).rows, [{ n: 1 }]);
    // And a write after them commits as one would alone.
    assert.deepEqual(await insert('h', 2), [{ id: 'h' }]);
    assert.deepEqual(committed(), [{ id: 'g', n: 1 }, { id: 'h', n: 2 }]);
  });
});
