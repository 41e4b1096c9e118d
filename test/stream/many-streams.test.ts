import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { TEST_KEY, eachDatabase } from '../support/harness.ts';
import { type ListeningApp, startListening } from '../support/listening.ts';
import { until } from '../support/wire.ts';
import { type SseConnection, openSse } from './sse.ts';

/**
 * Issue 31: the streams of a table share its reader's reads of the change log (stream/change-streams.ts).
 * However a stream comes to it (standing at the end when it opens, catching up from an old id, opened
 * while the reader is busy, filtered, or held back by a client that stopped reading and then read
 * again), it sends every change it should, once, in order, as the feed has them.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Change = Record<string, any>;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const OPEN = { values: { status: { _eq: 'open' } } };


eachDatabase('many change streams of one table', (kind) => {
  let t: ListeningApp;
  let base: string;

  async function stream(table: string, query = '', headers: Record<string, string> = {}): Promise<SseConnection> {
    const c = await openSse(`${base}/api/tables/${table}/changes/stream${query}`, { 'x-api-key': TEST_KEY, ...headers });
    assert.equal(c.status, 200);
    return t.track(c);
  }

  async function feed(table: string): Promise<Change[]> {
    const out: Change[] = [];
    let cursor = 0;
    for (;;) {
      const r = await t.get(`/api/tables/${table}/changes?after=${cursor}&limit=1000`);
      assert.equal(r.status, 200, r.text);
      if (r.body.data.length === 0) return out;
      out.push(...r.body.data);
      cursor = r.body.nextCursor;
    }
  }

  async function makeTable(code: string): Promise<string> {
    const r = await t.post('/api/tables', { code, name: code, fields: [{ code: 'title', type: 'text' }, { code: 'status', type: 'text' }, { code: 'n', type: 'number' }] });
    assert.equal(r.status, 201, r.text);
    return r.body.id;
  }

  /** Waits until the stream has the change numbered `last` (or, filtered, nothing after what it has). */
  async function received(c: SseConnection, last: number, what: string): Promise<void> {
    await c.until(() => c.lastEventId !== undefined && Number(c.lastEventId) >= last, 15_000, what);
  }

  before(async () => {
    // Long stall time: a client held back here is behind, not gone.
    t = await startListening(kind, {}, { stream: { stallMs: 60_000 } });
    base = t.base;
  });
  after(() => t.close());

  it('fifty streams (at the end, from the start, filtered, opened during the writes): each sees its changes once, in order, as the feed has them', async () => {
    await makeTable('many');
    // Rows r0-r19 are updated below, d0-d19 deleted.
    const seeds = [...Array.from({ length: 20 }, (_, i) => `r${i}`), ...Array.from({ length: 20 }, (_, i) => `d${i}`)];
    const seeded = await t.post('/api/tables/many/rows-bulk', { data: seeds.map((id, i) => ({ id, values: { title: `seed ${i}`, status: i % 2 ? 'open' : 'closed', n: i } })) });
    assert.equal(seeded.status, 201, seeded.text);
    const start = seeds.length;
    const atEnd = await Promise.all(Array.from({ length: 25 }, () => stream('many')));
    const fromStart = await Promise.all(Array.from({ length: 10 }, () => stream('many', '?after=0')));
    const filtered = await Promise.all(Array.from({ length: 10 }, () => stream('many', `?after=${start}&filter=${encodeURIComponent(JSON.stringify(OPEN))}`)));
    for (const c of [...atEnd, ...fromStart, ...filtered]) await c.until(() => c.comments.includes('open'), 5000, 'open');

    // 200 single-row writes from many clients at once over a second and a half, and two bulk creates.
    const writes: Promise<{ status: number }>[] = [];
    for (let i = 0; i < 200; i++) {
      const k = i % 10;
      const write = () => {
        if (k < 5) return t.post('/api/tables/many/rows', { id: `w${i}`, values: { title: `new ${i}`, status: i % 3 ? 'open' : 'closed', n: i } });
        if (k < 9) return t.patch(`/api/tables/many/rows/r${i % 20}`, { values: { status: i % 4 < 2 ? 'open' : 'closed', n: 1000 + i } });
        return t.delete(`/api/tables/many/rows/d${(i - 9) / 10}`);
      };
      writes.push(sleep(Math.random() * 1500).then(write));
    }
    for (const at of [400, 1000]) {
      writes.push(
        sleep(at).then(() => t.post('/api/tables/many/rows-bulk', { data: Array.from({ length: 50 }, (_, j) => ({ id: `b${at}-${j}`, values: { title: `bulk ${j}`, status: j % 2 ? 'open' : 'closed' } })) })),
      );
    }
    // Five more open while the writes commit, from the start of them: they catch up, then join the others.
    await sleep(700);
    const late = await Promise.all(Array.from({ length: 5 }, () => stream('many', `?after=${start}`)));
    const answers = await Promise.all(writes);
    assert.ok(answers.every((a) => a.status < 300), 'every write committed');

    const all = await feed('many');
    const last = all.at(-1)?.sequence as number;
    assert.equal(all.length, start + 200 + 100);
    // What the filtered streams should send: each change after `start` whose row was open before or after it.
    const state = new Map<string, Change | null>();
    const kept: Change[] = [];
    for (const ch of all) {
      const before = state.get(ch.rowId) ?? null;
      if (ch.sequence > start && (ch.row?.values.status === 'open' || before?.values.status === 'open')) kept.push(ch);
      state.set(ch.rowId, ch.row);
    }
    assert.ok(kept.length > 50 && kept.length < all.length - start, `${kept.length} changes kept by the filter`);

    const expect = async (group: SseConnection[], changes: Change[], what: string) => {
      for (const [i, c] of group.entries()) {
        await received(c, changes.at(-1)?.sequence as number, `${what} ${i}`);
        assert.deepEqual(c.changes().map((ch) => ch.sequence), changes.map((ch) => ch.sequence), `${what} ${i}: every sequence once, in order`);
        assert.deepEqual(c.changes(), changes, `${what} ${i}: the feed's changes`);
        assert.equal(c.endedAt, undefined, `${what} ${i} goes on`);
      }
    };
    await expect(atEnd, all.slice(start), 'a stream opened at the end');
    await expect(fromStart, all, 'a stream from the start');
    await expect(filtered, kept, 'a filtered stream');
    await expect(late, all.slice(start), 'a stream opened during the writes');

    // All of them go on: one more change reaches each, once.
    assert.equal((await t.post('/api/tables/many/rows', { id: 'final', values: { status: 'open' } })).status, 201);
    for (const c of [...atEnd, ...fromStart, ...filtered, ...late]) {
      await received(c, last + 1, 'the final change');
      assert.equal(c.changes().filter((ch) => ch.rowId === 'final').length, 1);
    }
  });

  it('a stream whose client stops reading leaves the shared reads, and once it reads again catches up and rejoins them: every change once, in order', async () => {
    const tableId = await makeTable('held');
    const slow = await stream('held');
    const others = [await stream('held'), await stream('held')];
    for (const c of [slow, ...others]) await c.until(() => c.comments.includes('open'), 5000, 'open');
    slow.pause();
    const big = 'x'.repeat(4000);
    // Until the server holds back for it (its socket's buffers full: it stays held back): it leaves the streams the table's reader sends to.
    const heldBack = async () => t.app.changeStreams!.stats(tableId).held === 1 && (await sleep(300), t.app.changeStreams!.stats(tableId).held === 1);
    for (let i = 0; !(await heldBack()); i++) {
      assert.ok(i < 60, 'the server held back');
      const r = await t.post('/api/tables/held/rows-bulk', { data: Array.from({ length: 100 }, (_, k) => ({ values: { title: `${big}${i}-${k}` } })) });
      assert.equal(r.status, 201, r.text);
    }
    // The others, which read on, are sent to by the reader (a large batch may hold them back a moment too).
    await until('the slow stream held back, the other two live', () => {
      const { open: n, live, held } = t.app.changeStreams!.stats(tableId);
      return n === 3 && live === 2 && held === 1;
    }, 5000);
    // More while it is held back, then it reads again, and more after.
    for (let i = 0; i < 20; i++) assert.equal((await t.post('/api/tables/held/rows', { values: { title: `while held ${i}` } })).status, 201);
    slow.resume();
    for (let i = 0; i < 20; i++) assert.equal((await t.post('/api/tables/held/rows', { values: { title: `after ${i}` } })).status, 201);
    const all = await feed('held');
    for (const c of [slow, ...others]) {
      await received(c, all.at(-1)?.sequence as number, 'every change');
      assert.deepEqual(c.changes().map((ch) => ch.sequence), all.map((ch) => ch.sequence), 'every sequence once, in order');
    }
    // It is live again: it rejoined the others, and a change reaches it at once, like them.
    await until('it rejoins the live streams', () => t.app.changeStreams!.stats(tableId).live === 3, 5000);
    assert.equal((await t.post('/api/tables/held/rows', { id: 'last', values: {} })).status, 201);
    for (const c of [slow, ...others]) await c.until(() => c.changes().some((ch) => ch.rowId === 'last'), 2000, 'the last change');
  });
});
