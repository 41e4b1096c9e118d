import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { TEST_KEY, type ScratchDatabase, eachDatabase } from '../support/harness.ts';
import { type Server, buildProject, complaints, serveInstance, servedDatabase, stopAll } from '../support/served.ts';
import { callJson } from '../support/wire.ts';
import { type SseConnection, openSse } from './sse.ts';

/**
 * Issue 31, change streams on `rowhouse serve` processes (test/support/served.ts):
 *
 * - SIGTERM ends open streams cleanly (the client sees the end of the response), and the process
 *   exits 0 well within its shutdown bound, saying nothing wrong;
 * - PostgreSQL, two instances over one database: a change committed through one reaches a stream
 *   open on the other within a second, and a client cut off at random moments while 100 writes
 *   commit concurrently through both, reconnecting to either instance with Last-Event-ID, sees
 *   every sequence once, in order: the feed's.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Change = Record<string, any>;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const SHUTDOWN_BOUND_SECONDS = 10;

let project: string;
before(() => {
  project = buildProject('rowhouse-streams-build-');
});
after(() => stopAll());

function start(name: string, scratch: ScratchDatabase): Promise<Server> {
  return serveInstance(project, 'streams', name, { DATABASE_URL: scratch.url, ROWHOUSE_API_KEY: TEST_KEY, ROWHOUSE_SHUTDOWN_TIMEOUT_SECONDS: String(SHUTDOWN_BOUND_SECONDS) });
}

async function call(server: Server, method: string, path: string, body?: unknown) {
  const r = await callJson(server.base, method, path, body);
  assert.ok(r.status < 300, `${server.name} ${method} ${path}: ${r.status} ${r.text.slice(0, 300)}`);
  return r;
}

async function feed(server: Server, table: string, from: number): Promise<Change[]> {
  const out: Change[] = [];
  let cursor = from;
  for (;;) {
    const r = await call(server, 'GET', `/api/tables/${table}/changes?after=${cursor}&limit=1000`);
    if (r.body.data.length === 0) return out;
    out.push(...r.body.data);
    cursor = r.body.nextCursor;
  }
}

const streamOf = (server: Server, table: string, headers: Record<string, string> = {}, query = '') =>
  openSse(`${server.base}/api/tables/${table}/changes/stream${query}`, { 'x-api-key': TEST_KEY, ...headers });

eachDatabase('change streams on served instances', (kind) => {
  const scratch = servedDatabase(kind);

  it('SIGTERM ends open streams cleanly and the process exits 0 within its bound', async () => {
    const server = await start('sigterm', scratch);
    await call(server, 'POST', '/api/tables', { code: 'term', name: 'term', fields: [{ code: 'title', type: 'text' }] });
    const streams: SseConnection[] = [];
    for (let i = 0; i < 3; i++) streams.push(await streamOf(server, 'term'));
    for (const c of streams) await c.until(() => c.comments.includes('open'), 5000, 'open');
    await call(server, 'POST', '/api/tables/term/rows', { values: { title: 'seen' } });
    for (const c of streams) await c.until(() => c.events.length === 1, 5000, 'the change');
    const sent = Date.now();
    server.child.kill('SIGTERM');
    await Promise.all(streams.map((c) => c.ended));
    const ended = Date.now() - sent;
    const { code, signal } = await server.closed;
    const exited = Date.now() - sent;
    assert.equal(code, 0, `exit code (signal ${signal})`);
    assert.ok(ended < 3000, `streams ended ${ended} ms after SIGTERM`);
    assert.ok(exited < SHUTDOWN_BOUND_SECONDS * 1000, `exited ${exited} ms after SIGTERM`);
    // A clean end: the last chunk of the response came (not a reset), after whole events only.
    for (const c of streams) assert.ok(c.response.complete, 'the response ended whole');
    assert.deepEqual(complaints(server), []);
  });

  if (kind !== 'postgres') return;

  it('two instances: a change through one reaches a stream on the other within a second; cut off at random, resuming on either, every sequence once, in order', async () => {
    const [a, b] = await Promise.all([start('A', scratch), start('B', scratch)]);
    await call(a, 'POST', '/api/tables', { code: 'both', name: 'both', fields: [{ code: 'n', type: 'number' }] });
    await call(a, 'POST', '/api/tables/both/rows-bulk', { data: Array.from({ length: 20 }, (_, i) => ({ id: `s${i}`, values: { n: i } })) });

    // Latency across instances: written through A, seen on B.
    const onB = await streamOf(b, 'both');
    await onB.until(() => onB.comments.includes('open'), 5000, 'open');
    const latencies: number[] = [];
    for (let i = 0; i < 7; i++) {
      const wrote = Date.now();
      await call(a, 'POST', '/api/tables/both/rows', { values: { n: -i } });
      await onB.until(() => onB.events.length === i + 1, 1000, `change ${i} through A on B within a second`);
      latencies.push(Date.now() - wrote);
      await sleep(100 + Math.random() * 300);
    }
    onB.close();
    // Woken by A's NOTIFY, not by B's own look at the log every second (half a second on average).
    latencies.sort((x, y) => x - y);
    assert.ok(latencies[3] <= 250, `median ${latencies[3]} ms (${latencies.join(', ')})`);

    const start0 = (await feed(a, 'both', 0)).at(-1)?.sequence as number;
    const seen: Change[] = [];
    let lastId = String(start0);
    let reconnects = 0;
    let done = false;
    const reader = (async () => {
      for (;;) {
        const server = Math.random() < 0.5 ? a : b;
        const c = await streamOf(server, 'both', { 'last-event-id': lastId });
        assert.equal(c.status, 200);
        const want = 1 + Math.floor(Math.random() * 8);
        await c.until(() => c.events.length >= want, 2 + Math.random() * 40, 'changes').catch(() => {});
        c.close();
        await c.ended;
        seen.push(...c.changes());
        if (c.lastEventId !== undefined) lastId = c.lastEventId;
        reconnects++;
        if (done && seen.length >= 100) return;
        assert.ok(reconnects < 3000, 'the reader finishes');
      }
    })();
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 100; i++) {
      const via = i % 2 === 0 ? a : b;
      const write = () => (i % 5 === 4 ? call(via, 'PATCH', `/api/tables/both/rows/s${i % 20}`, { values: { n: 1000 + i } }) : call(via, 'POST', '/api/tables/both/rows', { values: { n: i } }));
      writes.push(sleep(Math.random() * 2000).then(write));
    }
    await Promise.all(writes);
    done = true;
    await reader;
    const expected = await feed(b, 'both', start0);
    assert.equal(expected.length, 100);
    assert.deepEqual(seen.map((c) => c.sequence), expected.map((c) => c.sequence), 'every sequence once, in order');
    assert.deepEqual(seen, expected);
    assert.ok(reconnects >= 3, `reconnected ${reconnects} times`);
    assert.deepEqual([...complaints(a), ...complaints(b)], []);
  });
});
