import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { TEST_KEY, eachDatabase } from '../support/harness.ts';
import { type ListeningApp, startListening } from '../support/listening.ts';
import { until } from '../support/wire.ts';
import { type SseConnection, openSse } from './sse.ts';

/**
 * Issue 31: a stream held back by its client catches up from its table's reader's recent reads
 * (stream/change-streams.ts keeps the last MiB of event text it read), sent the chunks the live
 * streams were sent, with no read of the log of its own; one held back further than that reads the
 * log up to where the recent reads begin, then goes on from them. Either way every change once,
 * in order, and it rejoins the live streams. (ChangeStreams.stats counts the two kinds of read.)
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));


eachDatabase('change streams catching up', (kind) => {
  let t: ListeningApp;

  // Long stall time: a client held back here is behind, not gone.
  before(async () => (t = await startListening(kind, {}, { stream: { stallMs: 60_000 } })));
  after(() => t.close());

  async function stream(table: string): Promise<SseConnection> {
    const c = t.track(await openSse(`${t.base}/api/tables/${table}/changes/stream`, { 'x-api-key': TEST_KEY }));
    assert.equal(c.status, 200);
    await c.until(() => c.comments.includes('open'), 5000, 'open');
    return c;
  }

  /** 100 rows of about 2 KB each (some 210 KB of event text), in one request. */
  async function bulk(table: string, tag: string): Promise<void> {
    const r = await t.post(`/api/tables/${table}/rows-bulk`, { data: Array.from({ length: 100 }, (_, k) => ({ values: { title: `${'x'.repeat(2000)} ${tag}-${k}` } })) });
    assert.equal(r.status, 201, r.text);
  }

  /** A table with three streams at its end, the first of which its client stopped reading until the server held it back. */
  async function heldBack(code: string): Promise<{ tableId: string; slow: SseConnection; others: SseConnection[] }> {
    const made = await t.post('/api/tables', { code, name: code, fields: [{ code: 'title', type: 'text' }] });
    assert.equal(made.status, 201, made.text);
    const tableId = made.body.id as string;
    const slow = await stream(code);
    const others = [await stream(code), await stream(code)];
    slow.pause();
    const held = async () => t.app.changeStreams!.stats(tableId).held >= 1 && (await sleep(300), t.app.changeStreams!.stats(tableId).held >= 1);
    for (let i = 0; !(await held()); i++) {
      assert.ok(i < 150, 'the server held back');
      await bulk(code, `fill ${i}`);
    }
    await until('the slow stream held back, the other two live', () => {
      const { open: n, live, held } = t.app.changeStreams!.stats(tableId);
      return n === 3 && live === 2 && held === 1;
    }, 5000);
    return { tableId, slow, others };
  }

  async function everyChange(code: string, streams: SseConnection[]): Promise<void> {
    const all: { sequence: number }[] = [];
    for (let cursor = 0; ; ) {
      const r = await t.get(`/api/tables/${code}/changes?after=${cursor}&limit=1000`);
      assert.equal(r.status, 200, r.text);
      if (r.body.data.length === 0) break;
      all.push(...r.body.data);
      cursor = r.body.nextCursor;
    }
    const last = all.at(-1)!.sequence;
    for (const c of streams) {
      await c.until(() => c.lastEventId !== undefined && Number(c.lastEventId) >= last, 20_000, 'every change');
      assert.deepEqual(c.changes().map((ch) => ch.sequence), all.map((ch) => ch.sequence), 'every sequence once, in order');
    }
  }

  it('a stream held back a little catches up from the reader\'s recent reads, without reading the log', async () => {
    const { tableId, slow, others } = await heldBack('near');
    for (let i = 0; i < 20; i++) assert.equal((await t.post('/api/tables/near/rows', { values: { title: `while held ${i}` } })).status, 201);
    assert.equal(t.app.changeStreams!.stats(tableId).logReads, 0, 'no stream read the log');
    slow.resume();
    await everyChange('near', [slow, ...others]);
    await until('it rejoins the live streams', () => t.app.changeStreams!.stats(tableId).live === 3, 5000);
    const { logReads, recentReads } = t.app.changeStreams!.stats(tableId);
    assert.ok(recentReads > 0, 'it caught up from the recent reads');
    assert.equal(logReads, 0, 'no stream read the log');
    assert.equal((await t.post('/api/tables/near/rows', { id: 'last', values: {} })).status, 201);
    for (const c of [slow, ...others]) await c.until(() => c.changes().some((ch) => ch.rowId === 'last'), 2000, 'the last change');
  });

  it('a stream held back further than the reader keeps reads the log up to its recent reads, then catches up from them', async () => {
    const { tableId, slow, others } = await heldBack('far');
    // Some 1.7 MB of events while it is held back: more than the reader keeps.
    for (let i = 0; i < 8; i++) await bulk('far', `while held ${i}`);
    slow.resume();
    await everyChange('far', [slow, ...others]);
    await until('it rejoins the live streams', () => t.app.changeStreams!.stats(tableId).live === 3, 5000);
    const { logReads, recentReads } = t.app.changeStreams!.stats(tableId);
    assert.ok(logReads > 0, 'it read the log for what the reader no longer kept');
    assert.ok(recentReads > 0, 'then went on from the recent reads');
    assert.equal((await t.post('/api/tables/far/rows', { id: 'last', values: {} })).status, 201);
    for (const c of [slow, ...others]) await c.until(() => c.changes().some((ch) => ch.rowId === 'last'), 2000, 'the last change');
  });
});
