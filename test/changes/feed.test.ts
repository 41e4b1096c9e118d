import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PassThrough } from 'node:stream';
import { sql } from 'kysely';
import { changeNumbers } from '../../src/domain/row-columns.ts';
import { entriesAfter } from '../../src/store/change-log.ts';
import { migrate } from '../../src/store/migrations.ts';
import { TEST_KEY, type TestApp, eachDatabase, expectError, freshTable, startApp } from '../support/harness.ts';

/**
 * The change log and its feed (issue "Change events", items 1 and 2): one change per committed
 * row write, none for a rolled-back one, numbered in commit order, read from a cursor.
 */

interface Change {
  sequence: number;
  type: string;
  tableId: string;
  rowId: string;
  row: Record<string, any> | null;
  changedFields: string[] | null;
  occurredAt: string;
  memberId: string;
}

eachDatabase('changes: the log and its feed', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(kind);
  });
  after(() => t.close());

  const table = () => freshTable(t, 'c', [{ code: 'title', type: 'text' }, { code: 'n', type: 'number' }]);
  async function feed(code: string, query: Record<string, string> = {}): Promise<{ data: Change[]; nextCursor: number }> {
    const r = await t.get(`/api/tables/${code}/changes`, { query });
    assert.equal(r.status, 200, r.text);
    return r.body;
  }
  /** Every change kept, following nextCursor. */
  async function all(code: string): Promise<Change[]> {
    const out: Change[] = [];
    let cursor: number | undefined;
    for (;;) {
      const page = await feed(code, { limit: '7', ...(cursor === undefined ? {} : { after: String(cursor) }) });
      out.push(...page.data);
      if (page.data.length === 0) return out;
      cursor = page.nextCursor;
    }
  }

  it('records single, bulk, batch and upsert writes, with the row after each', async () => {
    const { code, id } = await table();
    const created = await t.post(`/api/tables/${code}/rows`, { id: 'r1', values: { title: 'one', n: 1 } });
    const updated = await t.patch(`/api/tables/${code}/rows/r1`, { values: { n: 2 } });
    assert.equal((await t.post(`/api/tables/${code}/rows-bulk`, { data: [{ id: 'b1', values: { title: 'b1' } }, { id: 'b2', values: {} }] })).status, 201);
    assert.equal((await t.patch(`/api/tables/${code}/rows-bulk`, { data: [{ id: 'b1', values: { title: 'B1' } }] })).status, 200);
    assert.equal((await t.post(`/api/tables/${code}/rows`, { id: 'b2', values: { n: 5 }, options: { upsert: true } })).status, 200);
    assert.equal((await t.post('/api/rows-batch', { operations: [{ type: 'create', tableId: code, id: 'x1', values: {} }, { type: 'delete', tableId: code, id: 'b1' }] })).status, 200);
    assert.equal((await t.delete(`/api/tables/${code}/rows-bulk`, { ids: ['x1'] })).status, 200);
    assert.equal((await t.delete(`/api/tables/${code}/rows/r1`)).status, 204);

    const changes = await all(code);
    assert.deepEqual(changes.map((c) => [c.sequence, c.type, c.rowId]), [
      [1, 'create', 'r1'], [2, 'update', 'r1'], [3, 'create', 'b1'], [4, 'create', 'b2'], [5, 'update', 'b1'],
      [6, 'update', 'b2'], [7, 'create', 'x1'], [8, 'delete', 'b1'], [9, 'delete', 'x1'], [10, 'delete', 'r1'],
    ]);
    assert.deepEqual(changes[0].row, created.body);
    assert.deepEqual(changes[1].row, updated.body);
    assert.deepEqual(changes[1].changedFields, ['n']);
    assert.equal(changes[0].changedFields, null);
    assert.equal(changes[9].row, null);
    for (const c of changes) {
      assert.equal(c.tableId, id);
      assert.equal(c.memberId, t.ownerId);
      assert.match(c.occurredAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
  });

  it('numbers the changes of one batch in the order of its operations, whichever way each is written', async () => {
    const { code } = await table();
    assert.equal((await t.post(`/api/tables/${code}/rows`, { id: 'x', values: { n: 1 } })).status, 201);
    // A run of creates is one multi-row insert (on PostgreSQL with its entries in the same statement);
    // the update and delete before it are noted first and must keep their places.
    const ops = [
      { type: 'update', tableId: code, id: 'x', values: { n: 2 } },
      { type: 'delete', tableId: code, id: 'x' },
      { type: 'create', tableId: code, id: 'x', values: { n: 3 } },
      { type: 'create', tableId: code, id: 'y', values: { n: 4 } },
      { type: 'update', tableId: code, id: 'y', values: { n: 5 } },
    ];
    const r = await t.post('/api/rows-batch', { operations: ops });
    assert.equal(r.status, 200, r.text);
    const changes = await all(code);
    assert.deepEqual(changes.map((c) => [c.sequence, c.type, c.rowId, c.row?.values.n ?? null]), [
      [1, 'create', 'x', 1], [2, 'update', 'x', 2], [3, 'delete', 'x', null], [4, 'create', 'x', 3], [5, 'create', 'y', 4], [6, 'update', 'y', 5],
    ]);
    assert.deepEqual(changes[3].row, r.body.data[2].row);
    assert.deepEqual(changes[5].row, r.body.data[4].row);
  });

  it('records nothing for a write that fails or rolls back', async () => {
    const { code } = await table();
    assert.equal((await t.post(`/api/tables/${code}/rows`, { id: 'r1', values: {} })).status, 201);
    const failed = await t.post('/api/rows-batch', { operations: [{ type: 'create', tableId: code, id: 'r2', values: {} }, { type: 'update', tableId: code, id: 'nope', values: {} }] });
    expectError(failed, 404);
    expectError(await t.post(`/api/tables/${code}/rows-bulk`, { data: [{ id: 'r3', values: {} }, { id: 'r1', values: {} }] }), 409);
    expectError(await t.post(`/api/tables/${code}/rows`, { id: 'r1', values: {} }), 409);
    expectError(await t.patch(`/api/tables/${code}/rows/nope`, { values: {} }), 404);
    assert.deepEqual((await all(code)).map((c) => c.rowId), ['r1']);
  });

  it("numbers a bulk create's rows in the order sent, not by id, each entry the row as answered", async () => {
    const { code } = await table();
    // Ids out of their sort order, and rows without one (the service makes theirs).
    const data = Array.from({ length: 30 }, (_, i) => ({ ...(i % 5 === 4 ? {} : { id: `r${(i * 17) % 30}-${'zyxw'[i % 4]}` }), values: { n: i, title: i % 3 === 0 ? null : `t"${i}'\\` } }));
    const r = await t.post(`/api/tables/${code}/rows-bulk`, { data });
    assert.equal(r.status, 201, r.text);
    const changes = await all(code);
    assert.deepEqual(changes.map((c) => [c.sequence, c.type]), data.map((_, i) => [i + 1, 'create']));
    assert.deepEqual(changes.map((c) => c.rowId), r.body.data.map((row: { id: string }) => row.id));
    assert.deepEqual(changes.map((c) => c.row), r.body.data);
  });

  it('pages by nextCursor: the last sequence returned, or `after` when none', async () => {
    const { code } = await table();
    const data = Array.from({ length: 25 }, (_, i) => ({ id: `r${i}`, values: { n: i } }));
    assert.equal((await t.post(`/api/tables/${code}/rows-bulk`, { data })).status, 201);
    const first = await feed(code, { limit: '10' });
    assert.deepEqual(first.data.map((c) => c.sequence), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    assert.equal(first.nextCursor, 10);
    const last = await feed(code, { after: '20', limit: '10' });
    assert.deepEqual(last.data.map((c) => c.sequence), [21, 22, 23, 24, 25]);
    assert.equal(last.nextCursor, 25);
    assert.deepEqual(await feed(code, { after: '25' }), { data: [], nextCursor: 25 });
    assert.equal((await feed(code)).data.length, 25, 'limit defaults to 100');
    for (const query of [{ limit: '0' }, { limit: '1001' }, { after: '-1' }, { after: 'x' }, { wait: '31' }, { wait: '0' }, { other: '1' }]) {
      expectError(await t.get(`/api/tables/${code}/changes`, { query }), 400);
    }
    expectError(await t.get('/api/tables/nope/changes'), 404);
    expectError(await t.get(`/api/tables/${code}/changes`, { key: null }), 401);
  });

  it('long-polls with wait: answers as soon as a change commits, or empty when the time is up', async () => {
    const { code } = await table();
    const t0 = Date.now();
    const waiting = t.get(`/api/tables/${code}/changes`, { query: { after: '0', wait: '10' } });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await t.post(`/api/tables/${code}/rows`, { id: 'late', values: {} })).status, 201);
    const r = await waiting;
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.data.map((c: Change) => c.rowId), ['late']);
    assert.ok(Date.now() - t0 < 5000, `answered after ${Date.now() - t0} ms`);
    const t1 = Date.now();
    const empty = await t.get(`/api/tables/${code}/changes`, { query: { after: '1', wait: '1' } });
    assert.deepEqual(empty.body, { data: [], nextCursor: 1 });
    assert.ok(Date.now() - t1 >= 900, 'waited about a second');
  });

  it('keeps changes for the retention, then answers 410 to a cursor before them', async () => {
    const { code } = await table();
    assert.equal((await t.post(`/api/tables/${code}/rows-bulk`, { data: [{ id: 'a', values: {} }, { id: 'b', values: {} }] })).status, 201);
    await t.app.changes!.purge(t.database.db, new Date(Date.now() + 1000).toISOString());
    assert.equal((await t.post(`/api/tables/${code}/rows`, { id: 'c', values: {} })).status, 201);
    const gone = expectError(await t.get(`/api/tables/${code}/changes`, { query: { after: '1' } }), 410);
    assert.match(gone.message as string, /no longer kept/);
    assert.deepEqual((await feed(code, { after: '2' })).data.map((c) => c.rowId), ['c']);
    assert.deepEqual((await feed(code)).data.map((c) => [c.sequence, c.rowId]), [[3, 'c']], 'without after: the oldest kept');
  });

  it('retention finds the last entry older than the cutoff among many, by number', async () => {
    const { code } = await table();
    const bulk = (from: number, n: number) => t.post(`/api/tables/${code}/rows-bulk`, { data: Array.from({ length: n }, (_, i) => ({ id: `r${from + i}`, values: { n: i } })) });
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    for (let i = 0; i < 3; i++) assert.equal((await bulk(100 * i, 100)).status, 201);
    await sleep(30);
    const cutoff = new Date().toISOString();
    await sleep(30);
    assert.equal((await bulk(300, 57)).status, 201);
    for (let i = 0; i < 3; i++) assert.equal((await t.patch(`/api/tables/${code}/rows/r${i}`, { values: { n: -1 } })).status, 200);
    // (Other tests' tables are purged too: the counts are the app's.)
    assert.ok((await t.app.changes!.purge(t.database.db, cutoff)) >= 300);
    assert.equal(await t.app.changes!.purge(t.database.db, cutoff), 0, 'nothing more to delete');
    expectError(await t.get(`/api/tables/${code}/changes`, { query: { after: '299' } }), 410);
    const kept = await all(code);
    assert.deepEqual([kept.length, kept[0].sequence, kept[kept.length - 1].sequence], [60, 301, 360]);
    assert.equal((await feed(code, { after: '300' })).data[0].sequence, 301);
    assert.ok((await t.app.changes!.purge(t.database.db, new Date(Date.now() + 1000).toISOString())) >= 60);
    assert.deepEqual((await feed(code)).data, []);
    expectError(await t.get(`/api/tables/${code}/changes`, { query: { after: '359' } }), 410);
  });

  it('reads pages across numbers no entry took (a failed transaction took them), in order, none skipped', async () => {
    const tableId = `gaps-${kind}`;
    const numbers = [1, 2, 3, 10, 11, 500, 501, 502, 9000];
    await t.database.db
      .insertInto('rh_changes')
      .values(numbers.map((n) => ({ tableId, sequence: n, type: 'create' as const, rowId: `r${n}`, row: '{}', changedFields: null, occurredAt: new Date().toISOString(), memberId: null })))
      .execute();
    const read = async (after: number, through: number, limit: number) => (await entriesAfter(t.database.db, tableId, after, through, limit)).map((e) => Number(e.sequence));
    // The first window (the `limit` numbers after `after`) holds the page, or part of it; the rest comes after it.
    assert.deepEqual(await read(0, 10_000, 3), [1, 2, 3]);
    assert.deepEqual(await read(0, 10_000, 5), [1, 2, 3, 10, 11]);
    assert.deepEqual(await read(3, 10_000, 2), [10, 11]);
    assert.deepEqual(await read(11, 10_000, 2), [500, 501]);
    assert.deepEqual(await read(502, 10_000, 100), [9000]);
    assert.deepEqual(await read(9000, 10_000, 100), []);
    // Never past `through`, in either query.
    assert.deepEqual(await read(0, 10, 100), [1, 2, 3, 10]);
    assert.deepEqual(await read(3, 501, 100), [10, 11, 500, 501]);
    assert.deepEqual(await read(11, 11, 100), []);
    // Followed page by page, every entry once, in order.
    const followed: number[] = [];
    for (let after = 0; ; ) {
      const page = await read(after, 10_000, 2);
      if (page.length === 0) break;
      followed.push(...page);
      after = page[page.length - 1];
    }
    assert.deepEqual(followed, numbers);
    await t.database.db.deleteFrom('rh_changes').where('tableId', '=', tableId).execute();
  });

  it('SQLite: migration 10 keeps every entry, in a table clustered by its key', { skip: kind !== 'sqlite' && 'SQLite only' }, async () => {
    const { code } = await table();
    assert.equal((await t.post(`/api/tables/${code}/rows-bulk`, { data: [{ id: 'a', values: { n: 1 } }, { id: 'b', values: {} }] })).status, 201);
    assert.equal((await t.delete(`/api/tables/${code}/rows/a`)).status, 204);
    const before = await all(code);
    const clustered = async () => (await sql<{ wr: number }>`select wr from pragma_table_list where name = 'rh_changes'`.execute(t.database.db)).rows[0].wr;
    assert.equal(await clustered(), 1);
    await sql`delete from rh_migrations where version = 10`.execute(t.database.db);
    assert.deepEqual(await migrate(t.database.db, t.database.dialect), [10]);
    assert.equal(await clustered(), 1);
    assert.deepEqual(await all(code), before);
    assert.equal((await t.post(`/api/tables/${code}/rows`, { id: 'c', values: {} })).status, 201);
    assert.deepEqual((await all(code)).map((c) => c.sequence), [1, 2, 3, 4]);
  });

  it('PostgreSQL: migration 11 numbers a table on from where its counter stopped', { skip: kind !== 'postgres' && 'PostgreSQL only' }, async () => {
    const { code, id } = await table();
    assert.equal((await t.post(`/api/tables/${code}/rows-bulk`, { data: [{ id: 'a', values: {} }, { id: 'b', values: {} }, { id: 'c', values: {} }] })).status, 201);
    const before = await all(code);
    // As a database migrated to 10 left it: the table's counter at its last number, no sequence.
    await sql`insert into rh_change_counters ("tableId", "last", "purgedThrough") values (${id}, 3, 0)`.execute(t.database.db);
    await sql`drop sequence ${sql.id(changeNumbers(id))}`.execute(t.database.db);
    await sql`delete from rh_migrations where version = 11`.execute(t.database.db);
    assert.deepEqual(await migrate(t.database.db, t.database.dialect), [11]);
    assert.deepEqual(await all(code), before);
    assert.equal((await t.post(`/api/tables/${code}/rows`, { id: 'd', values: {} })).status, 201);
    assert.deepEqual((await all(code)).map((c) => [c.sequence, c.rowId]), [[1, 'a'], [2, 'b'], [3, 'c'], [4, 'd']]);
  });

  it('is the same feed for another instance, and after a restart', async () => {
    const { code } = await table();
    assert.equal((await t.post(`/api/tables/${code}/rows`, { id: 'r1', values: {} })).status, 201);
    const twin = await startApp(kind, {}, { sharing: t });
    try {
      assert.equal((await twin.post(`/api/tables/${code}/rows`, { id: 'r2', values: {} })).status, 201);
      assert.deepEqual((await twin.get(`/api/tables/${code}/changes`)).body.data.map((c: Change) => [c.sequence, c.rowId]), [[1, 'r1'], [2, 'r2']]);
      // A long poll on one instance hears a commit on the other (within its look-again interval).
      const waiting = t.get(`/api/tables/${code}/changes`, { query: { after: '2', wait: '5' } });
      await new Promise((r) => setTimeout(r, 200));
      assert.equal((await twin.post(`/api/tables/${code}/rows`, { id: 'r3', values: {} })).status, 201);
      assert.deepEqual((await waiting).body.data.map((c: Change) => c.rowId), ['r3']);
    } finally {
      await twin.close();
    }
  });

  describe('concurrent writers', () => {
    it('a reader following nextCursor while many writers commit sees every change once, none skipped', async () => {
      const { code } = await table();
      // Two instances on PostgreSQL. Two SQLite instances in one process would wait on each other's
      // write lock with the event loop blocked (SQLite's busy wait is synchronous); as processes they
      // take turns, and within one process writes already queue on its one connection.
      const twin = kind === 'postgres' ? await startApp(kind, {}, { sharing: t }) : t;
      try {
        let done = false;
        const seen: number[] = [];
        const reader = (async () => {
          let cursor = 0;
          for (;;) {
            const finished = done;
            const page = await feed(code, { after: String(cursor), limit: '50' });
            seen.push(...page.data.map((c) => c.sequence));
            cursor = page.nextCursor;
            if (finished && page.data.length === 0) return;
            if (page.data.length === 0) await new Promise((r) => setTimeout(r, 5));
          }
        })();
        const writes = [];
        for (let i = 0; i < 120; i++) {
          const app = i % 2 === 0 ? t : twin;
          writes.push(i % 3 === 0 ? app.post(`/api/tables/${code}/rows-bulk`, { data: [{ id: `b${i}a`, values: {} }, { id: `b${i}b`, values: {} }] }) : app.post(`/api/tables/${code}/rows`, { id: `s${i}`, values: { n: i } }));
        }
        for (const r of await Promise.all(writes)) assert.ok(r.status === 201, r.text);
        done = true;
        await reader;
        const total = 120 + 40;
        assert.deepEqual(seen, Array.from({ length: total }, (_, i) => i + 1));
      } finally {
        if (twin !== t) await twin.close();
      }
    });
  });

  it('never passes a number still to commit: a write committed while an import holding lower numbers is open waits for it', async () => {
    const { code, id } = await table();
    const lines = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => `i${from + k},${from + k}\n`).join('');
    // The body arrives in two parts: the first past the 5,000 entries a transaction writes (and
    // numbers) before it commits, the second only when the test says.
    const body = new PassThrough();
    body.write(`id,n\n${lines(0, 5500)}`);
    const importing = t.app.inject({
      method: 'POST',
      url: `/api/tables/${code}/rows-import?format=csv&encoding=utf8`,
      headers: { 'x-api-key': TEST_KEY, 'content-type': 'text/csv' },
      payload: body,
    });
    if (kind === 'postgres') {
      // Until it has taken its first 5,000 numbers from the table's sequence (which every session
      // sees at once); it holds its guard (change-log.ts) until it ends.
      const handed = sql<{ n: string | null }>`select pg_sequence_last_value(${`"${changeNumbers(id)}"`}) as n`;
      for (let i = 0; Number((await handed.execute(t.database.db)).rows[0].n ?? 0) < 5000; i++) {
        assert.ok(i < 1000, 'the import took no numbers');
        await new Promise((r) => setTimeout(r, 10));
      }
    } else {
      await new Promise((r) => setTimeout(r, 300));
    }
    // A single write meanwhile. On PostgreSQL it commits at once, numbered after the import's
    // first numbers; on SQLite it waits for the import's transaction.
    const single = t.post(`/api/tables/${code}/rows`, { id: 's', values: { n: -1 } });
    try {
      if (kind === 'postgres') assert.equal((await single).status, 201);
      assert.deepEqual((await feed(code)).data, [], 'nothing is passed while lower numbers may still commit');
    } finally {
      body.end(lines(5500, 6000));
    }
    const imported = await importing;
    assert.equal(imported.statusCode, 200, imported.body);
    assert.equal((await single).status, 201);
    const seen = await all(code);
    const numbers = seen.map((c) => c.sequence);
    assert.deepEqual(numbers, [...numbers].sort((a, b) => a - b));
    assert.deepEqual(seen.map((c) => c.rowId).sort(), [...Array.from({ length: 6000 }, (_, i) => `i${i}`), 's'].sort());
  });

  it('records an import, written as it goes when large, numbered without gaps; none when it fails', async () => {
    const { code } = await table();
    const csv = ['id,n', ...Array.from({ length: 12_000 }, (_, i) => `i${i},${i}`)].join('\n');
    const imported = await t.request('POST', `/api/tables/${code}/rows-import?format=csv&encoding=utf8`, { raw: csv, headers: { 'content-type': 'text/csv' } });
    assert.equal(imported.status, 200, imported.text);
    const failed = await t.request('POST', `/api/tables/${code}/rows-import?format=csv&encoding=utf8`, { raw: `${csv.replace(/i\d+,/g, (m) => `j${m.slice(1)}`)}\nj0,0`, headers: { 'content-type': 'text/csv' } });
    expectError(failed, 400);
    const seen: number[] = [];
    for (let cursor = 0; ; ) {
      const page = await feed(code, { after: String(cursor), limit: '1000' });
      if (page.data.length === 0) break;
      for (const c of page.data) seen.push(c.sequence);
      assert.equal(page.data[0].rowId, `i${page.data[0].sequence - 1}`);
      cursor = page.nextCursor;
    }
    assert.deepEqual(seen, Array.from({ length: 12_000 }, (_, i) => i + 1));
  });

  it('records a deleted table’s rows as deletes', async () => {
    const { code, id } = await table();
    assert.equal((await t.post(`/api/tables/${code}/rows-bulk`, { data: [{ id: 'a', values: {} }, { id: 'b', values: {} }] })).status, 201);
    assert.equal((await t.delete(`/api/tables/${id}`)).status, 200);
    const rows = await t.database.db.selectFrom('rh_changes').select(['sequence', 'type', 'rowId']).where('tableId', '=', id).orderBy('sequence').execute();
    assert.deepEqual(rows.map((r) => [Number(r.sequence), r.type, r.rowId]), [[1, 'create', 'a'], [2, 'create', 'b'], [3, 'delete', 'a'], [4, 'delete', 'b']]);
  });
});
