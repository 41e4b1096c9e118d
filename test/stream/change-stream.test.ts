import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { TEST_KEY, eachDatabase, expectError } from '../support/harness.ts';
import { type ListeningApp, startListening } from '../support/listening.ts';
import { type SseConnection, openSse } from './sse.ts';

/**
 * Issue 31 item 1, CONTRACT §14: GET /api/tables/{t}/changes/stream, on a listening server through
 * a real HTTP client (test/stream/sse.ts): the events are the feed's changes (id = sequence), a
 * client cut off at random moments while 100 writes commit concurrently and resuming with
 * Last-Event-ID sees every change once and in order, the filter keeps changes whose row matches
 * before or after, heartbeats in silence, a revoked key's stream ends within a second, a shutdown
 * ends streams, a client that stops reading is cut off with the server holding a bounded amount
 * for it, the signed stream URL for browsers, and bad input.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Change = Record<string, any>;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const HEARTBEAT_MS = 300;
const STALL_MS = 3000;

eachDatabase('change stream', (kind) => {
  let t: ListeningApp;
  let base: string;

  /** Opens the stream of a table (path and query after /api/tables/{t}/changes/stream). */
  async function stream(table: string, query = '', headers: Record<string, string> = {}, key: string | null = TEST_KEY): Promise<SseConnection> {
    return t.track(await openSse(`${base}/api/tables/${table}/changes/stream${query}`, { ...(key === null ? {} : { 'x-api-key': key }), ...headers }));
  }

  async function makeTable(code: string): Promise<string> {
    const r = await t.post('/api/tables', {
      code,
      name: code,
      fields: [
        { code: 'title', type: 'text' },
        { code: 'status', type: 'select', options: { choices: ['open', 'closed'] } },
        { code: 'n', type: 'number' },
      ],
    });
    assert.equal(r.status, 201, r.text);
    return r.body.id;
  }

  /** The feed's changes after `after`, all of them. */
  async function feed(table: string, from: number): Promise<Change[]> {
    const out: Change[] = [];
    let cursor = from;
    for (;;) {
      const r = await t.get(`/api/tables/${table}/changes?after=${cursor}&limit=1000`);
      assert.equal(r.status, 200, r.text);
      if (r.body.data.length === 0) return out;
      out.push(...r.body.data);
      cursor = r.body.nextCursor;
    }
  }

  async function write0(table: string, method: 'post' | 'patch' | 'delete', path: string, body?: unknown): Promise<void> {
    const r = await t[method](`/api/tables/${table}/rows${path}`, body);
    assert.ok(r.status < 300, r.text);
  }

  const cursorNow = async (table: string) => (await t.get(`/api/tables/${table}/changes?limit=1000&after=0`)).body.data.at(-1)?.sequence ?? 0;

  before(async () => {
    t = await startListening(kind, {}, { stream: { heartbeatMs: HEARTBEAT_MS, stallMs: STALL_MS } });
    base = t.base;
  });
  after(() => t.close());

  it('answers text/event-stream; without after, the changes committed after it opens, each as id: sequence, event: change, data: the feed\'s change', async () => {
    await makeTable('basic');
    const early = await t.post('/api/tables/basic/rows', { id: 'early', values: { title: 'before the stream' } });
    assert.equal(early.status, 201);
    const c = await stream('basic');
    assert.equal(c.status, 200);
    assert.match(String(c.headers['content-type']), /^text\/event-stream/);
    assert.equal(c.headers['cache-control'], 'no-store');
    await c.until(() => c.comments.includes('open'), 2000, 'the opening comment');
    assert.equal((await t.post('/api/tables/basic/rows', { id: 'a', values: { title: 'one', n: 1 } })).status, 201);
    assert.equal((await t.patch('/api/tables/basic/rows/a', { values: { n: 2 } })).status, 200);
    assert.equal((await t.delete('/api/tables/basic/rows/a')).status, 204);
    await c.until(() => c.events.length >= 3, 2000, 'three changes');
    const all = await feed('basic', 0);
    assert.deepEqual(c.changes(), all.slice(1), 'the feed\'s changes after the one before the stream opened');
    assert.deepEqual(c.events.map((e) => [e.event, Number(e.id)]), all.slice(1).map((ch) => ['change', ch.sequence]));
    assert.deepEqual(c.changes().map((ch) => ch.type), ['create', 'update', 'delete']);
  });

  it('a client cut off at random moments while 100 writes commit concurrently resumes with Last-Event-ID and sees every change once, in order', async () => {
    await makeTable('busy');
    const seeded = await t.post('/api/tables/busy/rows-bulk', { data: Array.from({ length: 30 }, (_, i) => ({ id: `s${i}`, values: { title: `seed ${i}`, n: i } })) });
    assert.equal(seeded.status, 201, seeded.text);
    const start = await cursorNow('busy');
    const writes: Promise<unknown>[] = [];
    const seen: Change[] = [];
    let lastId = String(start);
    let reconnects = 0;
    let done = false;
    const reader = (async () => {
      // The first connection resumes by `after`, each later one by Last-Event-ID (with a stale `after`: the header wins).
      for (let first = true; ; first = false) {
        const c: SseConnection = first ? await stream('busy', `?after=${start}`) : await stream('busy', `?after=${start}`, { 'last-event-id': lastId });
        assert.equal(c.status, 200);
        // Cut off after a random number of changes, or a random time without them.
        const want = 1 + Math.floor(Math.random() * 8);
        await c.until(() => c.events.length >= want, 2 + Math.random() * 30, 'changes').catch(() => {});
        c.close();
        await c.ended;
        seen.push(...c.changes());
        if (c.lastEventId !== undefined) lastId = c.lastEventId;
        reconnects++;
        if (done && seen.length >= 100) return;
        assert.ok(reconnects < 2000, 'the reader finishes');
      }
    })();
    // All 100 under way at once, starting over two seconds, so that they commit while the reader comes and goes.
    for (let i = 0; i < 100; i++) {
      const k = i % 10;
      const write = () => {
        if (k < 7) return t.post('/api/tables/busy/rows', { values: { title: `new ${i}`, n: i } });
        if (k < 9) return t.patch(`/api/tables/busy/rows/s${i % 20}`, { values: { n: 1000 + i } });
        return t.delete(`/api/tables/busy/rows/s${20 + (i - 9) / 10}`);
      };
      writes.push(sleep(Math.random() * 2000).then(write));
    }
    const answers = (await Promise.all(writes)) as { status: number }[];
    assert.ok(answers.every((a) => a.status < 300), 'every write committed');
    done = true;
    await reader;
    const expected = await feed('busy', start);
    assert.equal(expected.length, 100);
    assert.deepEqual(seen.map((c) => c.sequence), expected.map((c) => c.sequence), 'every sequence once, in order');
    assert.deepEqual(seen, expected);
    assert.ok(reconnects >= 3, `reconnected ${reconnects} times`);
  });

  it('filter keeps the changes whose row matches before or after the change', async () => {
    await makeTable('filtered');
    const filter = encodeURIComponent(JSON.stringify({ values: { status: { _eq: 'open' } } }));
    const c = await stream('filtered', `?filter=${filter}`);
    await c.until(() => c.comments.includes('open'), 2000, 'the opening comment');
    const write = async (method: 'post' | 'patch' | 'delete', path: string, body?: unknown) => {
      const r = await t[method](`/api/tables/filtered/rows${path}`, body);
      assert.ok(r.status < 300, r.text);
    };
    await write('post', '', { id: 'o', values: { status: 'open' } }); // kept: matches after
    await write('post', '', { id: 'c', values: { status: 'closed' } }); // dropped
    await write('patch', '/c', { values: { status: 'open' } }); // kept: matches after
    await write('patch', '/o', { values: { status: 'closed' } }); // kept: matched before
    await write('patch', '/o', { values: { n: 1 } }); // dropped: closed before and after
    await write('post', '', { id: 'x', values: { status: 'closed' } }); // dropped
    await write('delete', '/c'); // kept: matched before
    await write('delete', '/x'); // dropped
    await write('post', '', { id: 'end', values: { status: 'open' } }); // kept
    await c.until(() => c.changes().some((ch) => ch.rowId === 'end'), 3000, 'the last change');
    assert.deepEqual(
      c.changes().map((ch) => `${ch.type} ${ch.rowId}`),
      ['create o', 'update c', 'update o', 'delete c', 'create end'],
    );
    // Every kept change is the feed's, id for id.
    const all = await feed('filtered', 0);
    for (const ch of c.changes()) assert.deepEqual(ch, all.find((f) => f.sequence === ch.sequence));
  });

  it('filter on updatedAt: an update writing no field the filter names still moves updatedAt, so a row leaving by it is kept', async () => {
    await makeTable('stamped');
    await write0('stamped', 'post', '', { id: 'a', values: { n: 1 } });
    await write0('stamped', 'post', '', { id: 'b', values: { n: 1 } });
    const cut = (await t.get('/api/tables/stamped/rows/b')).body.updatedAt as string;
    await sleep(5);
    const filter = encodeURIComponent(JSON.stringify({ updatedAt: { _lte: cut } }));
    const c = await stream('stamped', `?filter=${filter}`);
    await c.until(() => c.comments.includes('open'), 2000, 'the opening comment');
    await write0('stamped', 'patch', '/a', { values: { n: 2 } }); // kept: matched before (its updatedAt was before the cut)
    await write0('stamped', 'patch', '/a', { values: { n: 3 } }); // dropped: after the cut before and after
    await write0('stamped', 'patch', '/b', { values: { title: 'x' } }); // kept: matched before
    await c.until(() => c.changes().some((ch) => ch.rowId === 'b'), 3000, 'the change of b');
    await sleep(200);
    assert.deepEqual(c.changes().map((ch) => `${ch.type} ${ch.rowId} ${ch.row.values.n}`), ['update a 2', 'update b 1']);
  });

  it('sends a comment line in silence (heartbeat)', async () => {
    await makeTable('quiet');
    const c = await stream('quiet');
    await sleep(HEARTBEAT_MS * 4);
    assert.ok(c.comments.filter((x) => x === 'heartbeat').length >= 2, `heartbeats: ${JSON.stringify(c.comments)}`);
    assert.equal(c.endedAt, undefined);
  });

  it('a key revoked, or one expiring, ends its streams within a second', async () => {
    await makeTable('revoke');
    const made = await t.post('/api/api-keys', { name: 'streamer' });
    assert.equal(made.status, 201, made.text);
    const c = await stream('revoke', '', {}, made.body.key);
    const other = await stream('revoke');
    await c.until(() => c.comments.includes('open'), 2000, 'open');
    assert.equal((await t.put(`/api/api-keys/${made.body.id}`, { revokedAt: new Date().toISOString() })).status, 200);
    const revokedAt = Date.now();
    await Promise.race([c.ended, sleep(1500)]);
    assert.ok(c.endedAt !== undefined && c.endedAt - revokedAt <= 1000, `ended ${c.endedAt === undefined ? 'never' : `${c.endedAt - revokedAt} ms`} after the revocation`);
    assert.equal(other.endedAt, undefined, 'the other key\'s stream goes on');
    expectError(await t.get('/api/tables/revoke/changes/stream', { key: made.body.key }), 401);

    const expiring = await t.post('/api/api-keys', { name: 'expiring', expiresAt: new Date(Date.now() + 1500).toISOString() });
    assert.equal(expiring.status, 201, expiring.text);
    const e = await stream('revoke', '', {}, expiring.body.key);
    assert.equal(e.status, 200);
    await Promise.race([e.ended, sleep(3500)]);
    assert.ok(e.endedAt !== undefined && e.endedAt - Date.parse(expiring.body.expiresAt) <= 1000, 'ended within a second of its expiry');
  });

  it('a client that stops reading: the server holds a bounded amount for it, then cuts it off; it resumes from its last id', async () => {
    const slowId = await makeTable('slow');
    const c = await stream('slow');
    await c.until(() => c.comments.includes('open'), 2000, 'open');
    c.pause();
    const big = 'x'.repeat(4000);
    let most = 0;
    const watch = setInterval(() => (most = Math.max(most, t.app.changeStreams!.stats(slowId).mostBuffered)), 10);
    try {
      // About 8 MB of changes: far more than the sockets' buffers take.
      for (let i = 0; i < 20; i++) {
        const r = await t.post('/api/tables/slow/rows-bulk', { data: Array.from({ length: 100 }, (_, k) => ({ values: { title: `${big}${i}-${k}` } })) });
        assert.equal(r.status, 201);
      }
      const wrote = Date.now();
      while (t.app.changeStreams!.stats(slowId).open > 0 && Date.now() - wrote < STALL_MS + 3000) await sleep(20);
      const cut = Date.now() - wrote;
      assert.equal(t.app.changeStreams!.stats(slowId).open, 0, 'the server cut the stream off');
      assert.ok(cut <= STALL_MS + 1000, `cut off ${cut} ms after the last write`);
    } finally {
      clearInterval(watch);
    }
    // Reading again, the client gets what its socket held, then the end.
    c.resume();
    await Promise.race([c.ended, sleep(3000)]);
    assert.ok(c.endedAt !== undefined, 'the client sees the stream end');
    // A batch of changes (100 of ~4 KB) and the streams' own buffers at most: not the 8 MB written.
    assert.ok(most > 0, 'the server did hold something for it');
    assert.ok(most < 1024 * 1024, `the server held at most ${most} bytes for the stream`);
    // It got some of the changes; resuming from its last id brings the rest, once each.
    const got = c.changes().map((ch) => ch.sequence);
    const resumed = await stream('slow', '', { 'last-event-id': c.lastEventId ?? '0' });
    await resumed.until(() => resumed.events.length + got.length >= 2000, 10_000, 'the rest');
    const all = [...got, ...resumed.changes().map((ch) => ch.sequence)];
    assert.deepEqual(all, (await feed('slow', 0)).map((ch) => ch.sequence));
  });

  it('a stream fallen behind retention ends rather than skip what was deleted; its reconnect answers 410', async () => {
    const laggingId = await makeTable('lagging');
    const c = await stream('lagging');
    await c.until(() => c.comments.includes('open'), 2000, 'open');
    c.pause();
    const big = 'x'.repeat(4000);
    const bulk = async (i: number) => {
      const r = await t.post('/api/tables/lagging/rows-bulk', { data: Array.from({ length: 100 }, (_, k) => ({ values: { title: `${big}${i}-${k}` } })) });
      assert.equal(r.status, 201);
    };
    // Until the server holds back for the client (the sockets' buffers full: it stays held back).
    const heldBack = async () => t.app.changeStreams!.stats(laggingId).held === 1 && (await sleep(300), t.app.changeStreams!.stats(laggingId).held === 1);
    for (let i = 0; !(await heldBack()); i++) {
      assert.ok(i < 40, 'the server held back');
      await bulk(i);
    }
    // More than the table's reader keeps of its last reads (1 MiB of events; a stream held back
    // less than that catches up from them, entries retention deleted meanwhile included, and skips nothing).
    for (let i = 40; i < 44; i++) await bulk(i);
    // Everything is deleted while the client is behind, then more comes.
    await t.app.changes!.purge(t.database.db, new Date(Date.now() + 1000).toISOString());
    assert.equal((await t.post('/api/tables/lagging/rows', { id: 'after-purge', values: {} })).status, 201);
    c.resume();
    await Promise.race([c.ended, sleep(STALL_MS + 2000)]);
    assert.ok(c.endedAt !== undefined, 'the stream ended');
    const got = c.changes().map((ch) => ch.sequence);
    assert.deepEqual(got, got.map((_, i) => got[0] + i), 'no gap in what came');
    assert.ok(!c.changes().some((ch) => ch.rowId === 'after-purge'), 'nothing after the gap');
    const again = await stream('lagging', '', { 'last-event-id': c.lastEventId ?? '0' });
    assert.equal(again.status, 410);
  });

  it('bad input: 400 naming the parameter, 404 for an unknown table, 401 without a key, 410 behind retention', async () => {
    await makeTable('bad');
    const plain = async (query: string, headers: Record<string, string> = {}, key: string | null = TEST_KEY) => {
      const c = await stream('bad', query, headers, key);
      return { status: c.status, body: JSON.parse(await c.text) };
    };
    let r = await plain('?after=-1');
    assert.equal(r.status, 400);
    assert.match(r.body.message, /after/);
    r = await plain('?after=x&filter=%7B');
    assert.equal(r.status, 400);
    assert.deepEqual(r.body.details.map((d: { path: string }) => d.path).sort(), ['after', 'filter']);
    r = await plain(`?filter=${encodeURIComponent(JSON.stringify({ values: { nope: { _eq: 1 } } }))}`);
    assert.equal(r.status, 400);
    assert.match(r.body.message, /nope/);
    r = await plain('?wait=3');
    assert.equal(r.status, 400);
    assert.match(r.body.message, /wait/);
    r = await plain('', { 'last-event-id': 'abc' });
    assert.equal(r.status, 400);
    assert.match(r.body.message, /Last-Event-ID/);
    assert.equal((await openSse(`${base}/api/tables/nowhere/changes/stream`, { 'x-api-key': TEST_KEY })).status, 404);
    r = await plain('', {}, null);
    assert.equal(r.status, 401);

    assert.equal((await t.post('/api/tables/bad/rows', { values: { title: 'gone soon' } })).status, 201);
    assert.equal((await t.post('/api/tables/bad/rows', { values: { title: 'gone soon' } })).status, 201);
    await t.app.changes!.purge(t.database.db, new Date(Date.now() + 1000).toISOString());
    r = await plain('?after=0');
    assert.equal(r.status, 410);
    r = await plain('', { 'last-event-id': '1' });
    assert.equal(r.status, 410);
    // From where the kept changes start, fine; an empty Last-Event-ID is none (after applies).
    const ok = await stream('bad', '?after=2', { 'last-event-id': '' });
    assert.equal(ok.status, 200);
  });

  it('a signed stream URL (POST …/changes/stream-url) opens the stream without a key, with its filter; altered, expired or of a revoked key → 403', async () => {
    const tableId = await makeTable('signed');
    const made = await t.post('/api/api-keys', { name: 'browser' });
    const key = made.body.key as string;
    const filter = { values: { status: { _eq: 'open' } } };
    const issued = await t.post('/api/tables/signed/changes/stream-url', { filter }, { key });
    assert.equal(issued.status, 200, issued.text);
    assert.deepEqual(Object.keys(issued.body).sort(), ['expiresAt', 'url']);
    const expires = Date.parse(issued.body.expiresAt);
    assert.ok(Math.abs(expires - (Date.now() + 3600_000)) < 5000, 'an hour by default');
    const url = new URL(issued.body.url);
    assert.equal(url.origin, 'http://rowhouse.test');
    assert.equal(url.pathname, `/streams/tables/${tableId}/changes`);
    const at = (u: URL) => `${base}${u.pathname}${u.search}`;

    const c = await openSse(at(url));
    t.track(c);
    assert.equal(c.status, 200);
    await c.until(() => c.comments.includes('open'), 2000, 'open');
    assert.equal((await t.post('/api/tables/signed/rows', { id: 'shut', values: { status: 'closed' } })).status, 201);
    assert.equal((await t.post('/api/tables/signed/rows', { id: 'opened', values: { status: 'open' } })).status, 201);
    await c.until(() => c.events.length >= 1, 2000, 'a change');
    await sleep(200);
    assert.deepEqual(c.changes().map((ch) => ch.rowId), ['opened'], 'the signed filter applies');

    // Resuming by after and Last-Event-ID works on the signed URL too.
    const resumed = await openSse(`${at(url)}&after=0`);
    t.track(resumed);
    await resumed.until(() => resumed.events.length >= 1, 2000, 'resumed');
    assert.deepEqual(resumed.changes().map((ch) => ch.rowId), ['opened']);

    const altered = new URL(url);
    altered.searchParams.set('filter', JSON.stringify({}));
    const forged = await openSse(at(altered));
    assert.equal(forged.status, 403);
    assert.equal(JSON.parse(await forged.text).statusCode, 403);
    const sig = new URL(url);
    const s = sig.searchParams.get('signature') as string;
    sig.searchParams.set('signature', (s[0] === 'A' ? 'B' : 'A') + s.slice(1));
    assert.equal((await openSse(at(sig))).status, 403);

    const short = await t.post('/api/tables/signed/changes/stream-url', { expiresIn: 1 }, { key });
    assert.equal(short.status, 200);
    await sleep(2100);
    const late = await openSse(at(new URL(short.body.url)));
    assert.equal(late.status, 403);
    assert.match(JSON.parse(await late.text).message, /expired/);

    assert.equal((await t.put(`/api/api-keys/${made.body.id}`, { revokedAt: new Date().toISOString() })).status, 200);
    await Promise.race([c.ended, sleep(1500)]);
    assert.ok(c.endedAt !== undefined, 'the stream of a revoked key\'s URL ends');
    assert.equal((await openSse(at(url))).status, 403);

    for (const [body, path] of [
      [{ expiresIn: 0 }, 'expiresIn'],
      [{ expiresIn: 86401 }, 'expiresIn'],
      [{ filter: { values: { nope: { _eq: 1 } } } }, 'filter.values.nope'],
      [{ other: 1 }, 'other'],
    ] as const) {
      const bad = expectError(await t.post('/api/tables/signed/changes/stream-url', body), 400);
      assert.ok(JSON.stringify(bad).includes(path), `${JSON.stringify(body)}: ${JSON.stringify(bad)}`);
    }
    expectError(await t.post('/api/tables/nowhere/changes/stream-url', {}), 404);
  });

  it('a table deleted: its streams send the deletes of its rows, then end', async () => {
    await makeTable('doomed');
    assert.equal((await t.post('/api/tables/doomed/rows-bulk', { data: [{ id: 'x', values: {} }, { id: 'y', values: {} }] })).status, 201);
    const c = await stream('doomed');
    await c.until(() => c.comments.includes('open'), 2000, 'open');
    assert.equal((await t.delete('/api/tables/doomed')).status, 200);
    await c.until(() => c.events.length === 2, 2000, 'the deletes');
    assert.deepEqual(c.changes().map((ch) => `${ch.type} ${ch.rowId}`), ['delete x', 'delete y']);
    // Found gone at the next look at the streams' tables (every second).
    await Promise.race([c.ended, sleep(2500)]);
    assert.ok(c.endedAt !== undefined, 'the stream ended');
    assert.equal((await stream('doomed')).status, 404);
  });

  it('a shutdown ends every stream at once', async () => {
    await makeTable('closing');
    const streams = [await stream('closing'), await stream('closing', '?after=0')];
    for (const c of streams) await c.until(() => c.comments.includes('open'), 2000, 'open');
    const started = Date.now();
    await t.app.close();
    await Promise.all(streams.map((c) => c.ended));
    assert.ok(Date.now() - started < 2000, `closed in ${Date.now() - started} ms`);
    assert.equal(t.app.changeStreams!.stats().open, 0);
  });
});
