import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { TEST_KEY, eachDatabase } from '../support/harness.ts';
import { type ListeningApp, startListening } from '../support/listening.ts';
import { type SseConnection, openSse } from './sse.ts';

/**
 * The streams of a filter through links are judged in turn, apart from the table's reader
 * (stream/change-streams.ts judgeInTurn), here with each judgement made slow, as under load: a table
 * deleted while a judgement runs still sends its streams their kept changes before they end; and
 * with more reads waiting than the queue holds, every stream of the filter is sent every change
 * once, in order, the recent reads each judged once for them all, not once per stream.
 * (Found by a review; both failed before the fix.)
 */
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

eachDatabase('change streams judged in turn through links', (kind) => {
  let t: ListeningApp;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let streams: any;
  let slowMs = 0;
  let linkCalls = 0;

  before(async () => {
    t = await startListening(kind, {}, { stream: { heartbeatMs: 300 } });
    streams = t.app.changeStreams;
    const kept = streams.kept.bind(streams);
    // A slow judgement (as under load: 200-800 ms measured in decisions.md), only for filters through links.
    streams.kept = async (filter: unknown, entries: unknown[]) => {
      const through = filter !== null && JSON.stringify(filter).includes('"mode":"some"');
      if (through) {
        linkCalls++;
        if (slowMs > 0) await sleep(slowMs);
      }
      return kept(filter, entries);
    };
    const r = await t.post('/api/tables', { code: 'customers', name: 'Customers', fields: [{ code: 'country', type: 'text' }] });
    assert.equal(r.status, 201, r.text);
    assert.equal((await t.post('/api/tables/customers/rows-bulk', { data: [{ id: 'jp', values: { country: 'JP' } }] })).status, 201);
  });
  after(() => t.close());

  async function open(table: string, filter: unknown): Promise<SseConnection> {
    const q = filter === null ? '' : `?filter=${encodeURIComponent(JSON.stringify(filter))}`;
    const c = t.track(await openSse(`${t.base}/api/tables/${table}/changes/stream${q}`, { 'x-api-key': TEST_KEY }));
    if (c.status !== 200) assert.fail(`${c.status}: ${await c.text}`);
    await c.until(() => c.comments.includes('open'), 2000, 'open');
    return c;
  }
  const through = { values: { customer: { _some: { values: { country: { _eq: 'JP' } } } } } };
  const names = (c: SseConnection) => c.changes().map((ch) => `${ch.sequence} ${ch.type} ${ch.rowId}`);

  it('a table deleted while a judgement runs: the filtered stream is sent its kept changes before it ends', async () => {
    const r = await t.post('/api/tables', { code: 'doomed', name: 'doomed', fields: [{ code: 'customer', type: 'link', options: { table: 'customers' } }] });
    assert.equal(r.status, 201, r.text);
    const plain = await open('doomed', null);
    const c = await open('doomed', through);
    slowMs = 2500;
    try {
      assert.equal((await t.post('/api/tables/doomed/rows', { id: 'o1', values: { customer: 'jp' } })).status, 201);
      await sleep(100);
      assert.equal((await t.delete('/api/tables/doomed')).status, 200);
      // The judgement under way (of o1's create) sleeps on; any judgement after is quick.
      slowMs = 0;
      await Promise.race([plain.ended, sleep(4000)]);
      await Promise.race([c.ended, sleep(4000)]);
    } finally {
      slowMs = 0;
    }
    assert.deepEqual(plain.changes().map((ch) => `${ch.type} ${ch.rowId}`), ['create o1', 'delete o1'], 'the unfiltered stream');
    assert.ok(c.endedAt !== undefined, 'the filtered stream ended');
    // o1 matched after its create (its customer is in JP), and its delete is kept (a deleted row's links cannot be told).
    assert.deepEqual(c.changes().map((ch) => `${ch.type} ${ch.rowId}`), ['create o1', 'delete o1'], 'the filtered stream was sent its kept changes before it ended');
  });

  it('overflow: several streams of one filter, a slow judgement and many reads: each sent every change once, in order; judgements counted', async () => {
    const r = await t.post('/api/tables', { code: 'orders', name: 'orders', fields: [{ code: 'n', type: 'number' }, { code: 'customer', type: 'link', options: { table: 'customers' } }] });
    assert.equal(r.status, 201, r.text);
    assert.equal((await t.post('/api/tables/orders/rows', { id: 'o', values: { n: 0, customer: 'jp' } })).status, 201);
    const cs = [];
    for (let i = 0; i < 5; i++) cs.push(await open('orders', through));
    const plain = await open('orders', null);
    linkCalls = 0;
    slowMs = 400;
    const N = 60;
    for (let i = 1; i <= N; i++) {
      assert.equal((await t.patch('/api/tables/orders/rows/o', { values: { n: i } })).status, 200);
      await sleep(12);
    }
    slowMs = 0;
    await plain.until(() => plain.changes().length === N, 10000, 'plain');
    for (const c of cs) await c.until(() => c.changes().length >= N, 30000, 'filtered');
    await sleep(500);
    const want = names(plain);
    for (const c of cs) assert.deepEqual(names(c), want);
    // Each read judged about once for the five streams (coalesced live, then shared while catching up), not once per stream.
    assert.ok(linkCalls <= N + 10, `${linkCalls} judgements for ${N} changes and 5 streams`);
    for (const table of streams.tables.values()) assert.equal(table.judging.size, 0, 'no judgement left waiting');
  });
});
