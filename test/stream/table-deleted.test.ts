import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import pg from 'pg';
import { changeNumbers } from '../../src/domain/row-columns.ts';
import { TEST_KEY, eachDatabase } from '../support/harness.ts';
import { type ListeningApp, startListening } from '../support/listening.ts';
import { openSse } from './sse.ts';

/**
 * Issue 31: a table deleted while its streams' reader reads. On PostgreSQL the deletion drops the
 * table's sequence of change numbers, and a reader asking how far it may read (readableThrough)
 * while the deletion holds the drop's lock waits for it; when the deletion commits, the sequence is
 * gone under the waiting statement ("could not open relation with OID"). That error ended the
 * table's streams before they had sent the deletion's changes (a reconnect then hears 404: the
 * deletes were lost to them), and a read of the feed at that moment answered 500. Here the
 * deletion is held after its drop (the test holds rh_files, which it writes next) until the
 * streams' reader waits on the sequence, then let go: the stream sends every delete, then ends,
 * and the feed read meanwhile answers them.
 */
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

eachDatabase('change streams of a table deleted', (kind) => {
  let t: ListeningApp;

  before(async () => {
    t = await startListening(kind);
  });
  after(() => t.close());

  it('a reader waiting on the deletion: the stream sends the deletes, then ends; the feed answers them', { skip: kind !== 'postgres' && 'PostgreSQL only (its sequence of change numbers, dropped by the deletion)' }, async () => {
    const made = await t.post('/api/tables', { code: 'doomed', name: 'doomed', fields: [{ code: 'n', type: 'number' }] });
    assert.equal(made.status, 201, made.text);
    const tableId = made.body.id as string;
    assert.equal((await t.post('/api/tables/doomed/rows-bulk', { data: ['x', 'y', 'z'].map((id) => ({ id, values: { n: 1 } })) })).status, 201);
    const c = t.track(await openSse(`${t.base}/api/tables/doomed/changes/stream?after=0`, { 'x-api-key': TEST_KEY }));
    await c.until(() => c.events.length === 3, 5000, 'the creates');

    const session = new pg.Client({ connectionString: t.config.databaseUrl });
    await session.connect();
    try {
      const { rows } = await session.query('select to_regclass($1)::oid as oid', [`"${changeNumbers(tableId)}"`]);
      const sequence = Number(rows[0].oid);
      // A row deleted just before the table.
      assert.equal((await t.delete('/api/tables/doomed/rows/x')).status, 204);
      await session.query('begin');
      // The deletion drops the sequence, then waits here (it marks the table's files released).
      await session.query('lock table rh_files in share mode');
      const deleting = t.delete('/api/tables/doomed');
      const waitingOn = async (relation: number) =>
        Number((await session.query('select count(*) as n from pg_locks where not granted and relation = $1', [relation])).rows[0].n);
      // The streams' reader looks every second: it then waits on the sequence the deletion dropped.
      const since = Date.now();
      while ((await waitingOn(sequence)) === 0) {
        assert.ok(Date.now() - since < 5000, 'the streams’ reader waits on the dropped sequence');
        await sleep(50);
      }
      // So does a read of the feed.
      const feed = t.get(`/api/tables/${tableId}/changes`, { query: { after: '0' } });
      while ((await waitingOn(sequence)) < 2) {
        assert.ok(Date.now() - since < 5000, 'the feed waits on the dropped sequence');
        await sleep(50);
      }
      await session.query('commit');
      assert.equal((await deleting).status, 200);
      const all = ['create x', 'create y', 'create z', 'delete x', 'delete y', 'delete z'];
      await Promise.race([c.ended, c.until(() => c.events.length === all.length, 3000, 'the deletes').catch(() => {})]);
      assert.deepEqual(c.changes().map((ch) => `${ch.type} ${ch.rowId}`), all, 'the stream sent every delete before it ended');
      await Promise.race([c.ended, sleep(3000)]);
      assert.ok(c.endedAt !== undefined, 'the stream ended');
      const read = await feed;
      assert.equal(read.status, 200, read.text);
      assert.deepEqual(read.body.data.map((ch: { type: string; rowId: string }) => `${ch.type} ${ch.rowId}`), all);
    } finally {
      await session.query('rollback').catch(() => {});
      await session.end();
    }
  });
});
