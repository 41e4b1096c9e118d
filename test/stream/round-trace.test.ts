import assert from 'node:assert/strict';
import diagnostics_channel from 'node:diagnostics_channel';
import type { AddressInfo } from 'node:net';
import { after, before, it } from 'node:test';
import type { RoundTrace } from '../../src/stream/round-trace.ts';
import { TEST_KEY, type TestApp, eachDatabase, startApp } from '../support/harness.ts';
import { type SseConnection, openSse } from './sse.ts';

/**
 * Issue 31: where a change waits between its commit and its socket write is published round by
 * round (stream/round-trace.ts) to whoever listens (bench/stream.ts with BENCH_STREAM_TRACE): the
 * commits that woke the reader, the read, the event text, and each live stream's write, by its
 * client's port, in the order they happened.
 */
eachDatabase('the change streams\' round trace', (kind) => {
  let t: TestApp;
  let base: string;
  const open: SseConnection[] = [];
  const rounds: RoundTrace[] = [];
  const heard = (message: unknown) => rounds.push(message as RoundTrace);

  before(async () => {
    t = await startApp(kind);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    diagnostics_channel.subscribe('rowhouse:change-streams:round', heard);
  });
  after(async () => {
    diagnostics_channel.unsubscribe('rowhouse:change-streams:round', heard);
    for (const c of open) c.close();
    await t.close();
  });

  it('names each round\'s commits, read, text and writes, by the client\'s port, in order', async () => {
    assert.equal((await t.post('/api/tables', { code: 'traced', name: 'traced', fields: [{ code: 'n', type: 'number' }] })).status, 201);
    const c = await openSse(`${base}/api/tables/traced/changes/stream`, { 'x-api-key': TEST_KEY });
    open.push(c);
    await c.until(() => c.comments.includes('open'), 5000, 'open');
    const port = c.response.socket.localPort;
    const before = Date.now();
    for (const id of ['one', 'two', 'three']) assert.equal((await t.post('/api/tables/traced/rows', { id, values: { n: 1 } })).status, 201);
    await c.until(() => c.changes().length === 3, 5000, 'the changes');
    const sequences = c.events.map((e) => Number(e.id));
    const mine = rounds.filter((r) => r.last > r.after);
    // Every change sent was read by a traced round, written to this client.
    for (const sequence of sequences) {
      const r = mine.find((x) => x.after < sequence && sequence <= x.last);
      assert.ok(r, `a round read ${sequence}`);
      assert.deepEqual(r.ports, [port]);
      assert.equal(r.writes.length, 1);
      assert.ok(r.commits.length >= 1, 'a commit woke the reader');
      for (const at of r.commits) assert.ok(at >= before - 1000 && at <= r.readStart, 'the commits came before the read');
      assert.ok(r.readStart <= r.readEnd && r.readEnd <= r.textEnd && r.textEnd <= r.writes[0] && r.writes[0] <= r.passEnd, 'read, text, write in order');
      assert.ok(r.passCpuMs >= 0 && r.passCpuMs <= r.passEnd - r.readStart + 1, "the writes' CPU, at most their time");
    }
  });
});
