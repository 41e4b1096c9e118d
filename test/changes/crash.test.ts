import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { after, before, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type ScratchDatabase, TEST_KEY, allRows, eachDatabase, scratchDatabase } from '../support/harness.ts';
import { childEnv } from '../support/served.ts';
import { type Arrival, WebhookReceiver } from '../support/webhook-receiver.ts';
import { callJson, freePort, overHttp, until } from '../support/wire.ts';

/**
 * SIGKILL of the service while webhook deliveries are pending (issue "Change events": "after
 * restart every event is delivered, and each event id reaches the receiver at least once"), with
 * the real CLI (`node bin/rowhouse.mjs serve`) in a child process and a real HTTP receiver here.
 *
 * Before the kill, three flows are each stuck in another way: one's receiver answers 500 (its head
 * waits for a retry, the rest queued behind it), one's holds its request unanswered (an attempt in
 * flight, leased to the process about to die), one's answers slowly (deliveries going out one by
 * one). A writer keeps writing single, bulk and batch changes into two tables, so the kill also
 * lands on writes in flight and on changes not yet planned into deliveries. A feed consumer keeps
 * its nextCursor and long-polls both tables' feeds throughout.
 *
 * The service is then started again on the same database with its clock 2 minutes ahead
 * (test/support/clock-ahead.mjs): as if the restart came after the dead process's leases (webhook
 * timeout + 30 s) ran out, so the test does not wait the half minute. Then, with the feed read
 * whole as the record of what committed: every change a flow selects reached the receiver at least
 * once, signed with the flow's secret, with the feed's change, one event id per change and flow;
 * nothing else reached it; each flow's first arrivals came in sequence order; the event whose
 * request was in flight at the kill came again, with its id; the consumer saw every committed
 * change exactly once; every acknowledged write is in the feed; the rows are the feed replayed.
 */

const BIN = fileURLToPath(new URL('../../bin/rowhouse.mjs', import.meta.url));
const CLOCK_AHEAD = fileURLToPath(new URL('../support/clock-ahead.mjs', import.meta.url));
const CLOCK_AHEAD_MS = 120_000;

interface Change {
  sequence: number;
  type: 'create' | 'update' | 'delete';
  tableId: string;
  rowId: string;
  row: { id: string; values: Record<string, unknown> } & Record<string, unknown> | null;
  changedFields: string[] | null;
  occurredAt: string;
  memberId: string;
}


/** `rowhouse serve` in a child process, started and waited for until it listens. */
class Service {
  private child: ChildProcess | null = null;
  private output = '';
  exited: Promise<NodeJS.Signals | number | null> = Promise.resolve(null);

  constructor(private readonly env: Record<string, string>) {}

  async start(clockAheadMs = 0): Promise<void> {
    const args = clockAheadMs ? ['--import', pathToFileURL(CLOCK_AHEAD).href, BIN, 'serve'] : [BIN, 'serve'];
    const child = spawn(process.execPath, args, { env: childEnv({ ...this.env, CLOCK_AHEAD_MS: String(clockAheadMs) }), stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    const keep = (d: Buffer) => {
      this.output = (this.output + d).slice(-20_000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve(signal ?? code)));
    const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    try {
      await new Promise<void>((resolve, reject) => {
        const check = () => {
          if (this.output.includes('Rowhouse is listening on')) resolve();
        };
        child.stdout?.on('data', check);
        this.exited.then((how) => reject(new Error(`serve ended (${how}) before listening:\n${this.output}`)));
      });
    } finally {
      clearTimeout(killer);
    }
  }

  /** SIGKILL: no shutdown of any kind; answers once the process is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGKILL');
    assert.equal(await this.exited, 'SIGKILL');
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const force = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await this.exited;
    clearTimeout(force);
  }

  log(): string {
    return this.output;
  }
}

/** The receiver's check as docs/api.md gives it, written here from the docs (not the service's own). */
function verified(header: string | string[] | undefined, body: string, secret: string): boolean {
  if (typeof header !== 'string') return false;
  const parts = Object.fromEntries(header.split(',').map((p) => p.split('=', 2)));
  const t = Number(parts.t);
  if (!Number.isInteger(t) || Math.abs(Date.now() / 1000 - t) > 300) return false;
  if (!/^[0-9a-f]{64}$/.test(parts.v1 ?? '')) return false;
  const expected = createHmac('sha256', secret).update(`${t}.${body}`).digest();
  return timingSafeEqual(expected, Buffer.from(parts.v1, 'hex'));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

eachDatabase('changes: SIGKILL while webhook deliveries are pending', (kind) => {
  let scratch: ScratchDatabase;
  let service: Service;
  let rx: WebhookReceiver;
  let base: string;
  /** The consumer's and the writer's loops run while these hold (after() ends them when the test fails). */
  let consuming = false;
  let writing = false;

  before(async () => {
    scratch = await scratchDatabase(kind);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    service = new Service({
      PORT: String(port),
      HOST: '127.0.0.1',
      ROWHOUSE_DATA_DIR: scratch.dir,
      DATABASE_URL: scratch.url,
      ROWHOUSE_API_KEY: TEST_KEY,
      ROWHOUSE_LOG_LEVEL: 'warn',
      ROWHOUSE_WEBHOOK_ALLOW_PRIVATE: 'true',
      ROWHOUSE_WEBHOOK_RETRY_BASE_MS: '300',
      ROWHOUSE_WEBHOOK_TIMEOUT_MS: '10000',
      ROWHOUSE_WEBHOOK_ATTEMPTS: '100',
    });
    rx = await new WebhookReceiver().start();
  });
  after(async () => {
    consuming = false;
    writing = false;
    await service?.stop();
    await rx?.stop();
    await scratch?.drop();
  });

  /** A request to the service; throws on a network error (the service is dead), answers any status. */
  const call = (method: string, url: string, body?: unknown) => callJson(base, method, url, body);

  async function ok(method: string, url: string, body?: unknown) {
    const r = await call(method, url, body);
    assert.ok(r.status >= 200 && r.status < 300, `${method} ${url} → ${r.status}: ${r.text.slice(0, 300)}`);
    return r.body;
  }

  /** The whole feed of a table as it is now, limit 1000, following nextCursor. */
  async function wholeFeed(table: string): Promise<Change[]> {
    const out: Change[] = [];
    for (let cursor = 0; ; ) {
      const page = await ok('GET', `/api/tables/${table}/changes?after=${cursor}&limit=1000`);
      if (page.data.length === 0) return out;
      out.push(...page.data);
      cursor = page.nextCursor;
    }
  }

  it('after a restart every committed change is delivered at least once, in each flow’s order, and a feed consumer sees each once', async (t) => {
    const t0 = Date.now();
    const mark = (what: string) => t.diagnostic(`${((Date.now() - t0) / 1000).toFixed(1)} s: ${what}`);
    await service.start();
    const tables = {
      a: (await ok('POST', '/api/tables', { code: 'a', name: 'A', fields: [{ code: 'title', type: 'text' }, { code: 'n', type: 'number' }] })).id as string,
      b: (await ok('POST', '/api/tables', { code: 'b', name: 'B', fields: [{ code: 'title', type: 'text' }] })).id as string,
    };
    // /f1 answers 500 until the restart, /f2 holds its requests unanswered, /f3 answers slowly.
    const flowDefs = {
      f1: { table: 'a', events: ['create', 'update', 'delete'] },
      f2: { table: 'a', events: ['create'], filter: { values: { n: { _lt: 1000 } } } },
      f3: { table: 'b', events: ['create', 'update'] },
    } as const;
    const flows: Record<string, { id: string; secret: string; table: 'a' | 'b'; select: (c: Change) => boolean }> = {};
    for (const [name, trigger] of Object.entries(flowDefs)) {
      const f = await ok('POST', '/api/flows', { name, enabled: true, definition: { trigger, webhook: { url: rx.url(`/${name}`) } } });
      const events: readonly string[] = trigger.events;
      flows[name] = {
        id: f.id,
        secret: f.secret,
        table: trigger.table,
        select: (c) => events.includes(c.type) && (name !== 'f2' || (c.row !== null && (c.row.values.n as number) < 1000)),
      };
    }
    rx.answer = ({ path }) => (path === '/f1' ? 500 : path === '/f2' ? 'hang' : { status: 200, delayMs: 30 });

    // The feed consumer: long polls each table from its stored nextCursor, across the kill and restart.
    const cursors: Record<string, number> = { a: 0, b: 0 };
    const consumed: Record<string, Change[]> = { a: [], b: [] };
    consuming = true;
    let consumerErrors = 0;
    const consumer = Promise.all(
      (['a', 'b'] as const).map(async (table) => {
        while (consuming) {
          try {
            const r = await call('GET', `/api/tables/${table}/changes?after=${cursors[table]}&limit=100&wait=1`);
            assert.equal(r.status, 200, r.text);
            consumed[table].push(...r.body.data);
            cursors[table] = r.body.nextCursor;
          } catch (err) {
            if (err instanceof assert.AssertionError) throw err;
            consumerErrors++; // the service is down: try again from the stored cursor
            await sleep(100);
          }
        }
      }),
    );
    consumer.catch(() => {}); // awaited below; a failure before then must not also be an unhandled rejection

    // The writer: each write's expected changes, and whether its answer came (acked) or not (unknown).
    const writes: { changes: [string, string, string][]; acked: boolean }[] = [];
    writing = true;
    let iterations = 0;
    async function write(method: string, url: string, body: unknown, changes: [string, string, string][]): Promise<boolean> {
      const w = { changes, acked: false };
      writes.push(w);
      let r;
      try {
        r = await call(method, url, body);
      } catch {
        return false; // killed meanwhile: committed or not, the feed says
      }
      assert.ok(r.status >= 200 && r.status < 300, `${method} ${url} → ${r.status}: ${r.text.slice(0, 300)}`);
      w.acked = true;
      return true;
    }
    async function writer(from: number, to: number): Promise<void> {
      for (let i = from; i < to && writing; i++) {
        const rows = Array.from({ length: 10 }, (_, k) => ({ id: `a${i}-${k}`, values: { title: `row ${i}.${k}`, n: (i * 37 + k * 101) % 2000 } }));
        const steps: [string, string, unknown, [string, string, string][]][] = [
          ['POST', '/api/tables/a/rows-bulk', { data: rows }, rows.map((r) => ['a', 'create', r.id])],
          ['PATCH', `/api/tables/a/rows/a${i}-0`, { values: { n: (i * 53) % 2000 } }, [['a', 'update', `a${i}-0`]]],
          ['POST', '/api/tables/b/rows', { id: `b${i}`, values: { title: `b ${i}` } }, [['b', 'create', `b${i}`]]],
        ];
        if (i % 3 === 2) steps.push(['DELETE', `/api/tables/a/rows/a${i - 1}-1`, undefined, [['a', 'delete', `a${i - 1}-1`]]]);
        if (i % 4 === 3) steps.push(['PATCH', '/api/tables/b/rows-bulk', { data: [{ id: `b${i - 1}`, values: { title: 'again' } }, { id: `b${i - 2}`, values: { title: 'again' } }] }, [['b', 'update', `b${i - 1}`], ['b', 'update', `b${i - 2}`]]]);
        if (i % 5 === 4) {
          steps.push(['POST', '/api/rows-batch', { operations: [{ type: 'create', tableId: 'a', id: `x${i}`, values: { n: i } }, { type: 'create', tableId: 'b', id: `x${i}`, values: {} }, { type: 'delete', tableId: 'a', id: `a${i}-2` }] }, [['a', 'create', `x${i}`], ['b', 'create', `x${i}`], ['a', 'delete', `a${i}-2`]]]);
        }
        for (const [method, url, body, changes] of steps) {
          if (!(await write(method, url, body, changes))) return;
        }
        iterations = i + 1;
        await sleep(15);
      }
    }

    // Write until each flow is stuck its way, then SIGKILL with the writer still writing.
    const writing1 = writer(0, 200);
    writing1.catch(() => {}); // awaited below
    const arrived = (path: string) => rx.received.filter((a) => a.path === path);
    await until(
      'each flow stuck its way',
      () => iterations >= 12 && arrived('/f1').length >= 2 && rx.hanging.size === 1 && arrived('/f3').length >= 5,
      20_000,
      () => `iterations ${iterations}; arrivals ${JSON.stringify(Object.fromEntries(['/f1', '/f2', '/f3'].map((p) => [p, arrived(p).length])))}; held ${rx.hanging.size}\n${service.log()}`,
    );
    const inFlight = [...rx.hanging][0].body.id as string;
    mark(`SIGKILL after ${iterations} rounds of writes, ${rx.received.length} requests received`);
    await service.kill();
    await writing1;
    const writtenBefore = writes.length;
    assert.ok(iterations < 200, 'the kill came while the writer was writing');

    // The receivers answer at once from now on; the same database, the clock past the dead leases.
    const lateFrom = rx.received.length;
    rx.answer = () => 200;
    await service.start(CLOCK_AHEAD_MS);
    mark('restarted');
    await writer(1000, 1010);
    writing = false;
    assert.ok(writes.slice(writtenBefore).every((w) => w.acked), 'the writes after the restart were answered');

    // What committed: the feeds, read whole.
    const feeds = { a: await wholeFeed('a'), b: await wholeFeed('b') };
    const bySequence = { a: new Map(feeds.a.map((c) => [c.sequence, c])), b: new Map(feeds.b.map((c) => [c.sequence, c])) };
    const expected = Object.fromEntries(Object.entries(flows).map(([name, f]) => [name, feeds[f.table].filter(f.select).map((c) => c.sequence)]));

    // Every selected change reaches its flow's receiver, and no delivery is left pending.
    const firstArrivals = (name: string) => {
      const seen = new Set<number>();
      const out: number[] = [];
      for (const a of arrived(`/${name}`)) {
        if (!seen.has(a.body.change.sequence)) out.push(a.body.change.sequence);
        seen.add(a.body.change.sequence);
      }
      return out;
    };
    await until(
      'every selected change delivered',
      () => Object.keys(flows).every((name) => firstArrivals(name).length >= expected[name].length),
      20_000,
      () => Object.keys(flows).map((n) => `${n}: ${firstArrivals(n).length} of ${expected[n].length}`).join(', '),
    );
    mark('every selected change delivered');
    await until('no delivery pending', async () => (await ok('GET', `/api/flow-deliveries?${new URLSearchParams({ filter: JSON.stringify({ status: { neq: 'succeeded' } }) })}`)).data.length === 0, 10_000);

    // Nothing but the selected changes, each flow's first arrivals in sequence order, each signed, the feed's change.
    const eventOf = new Map<string, string>();
    for (const [name, f] of Object.entries(flows)) {
      assert.deepEqual(firstArrivals(name), expected[name], `${name}: each selected change arrived, first arrivals in sequence order, nothing else`);
      for (const a of arrived(`/${name}`)) {
        assert.ok(verified(a.headers['rowhouse-signature'], a.text, f.secret), `${name}: the signature verifies with the flow's secret`);
        assert.equal(a.headers['rowhouse-event-id'], a.body.id);
        assert.equal(a.body.flowId, f.id);
        assert.deepEqual(a.body.change, bySequence[f.table].get(a.body.change.sequence), `${name}: the change as the feed has it`);
        const key = `${name}:${a.body.change.sequence}`;
        assert.equal(eventOf.get(a.body.id) ?? key, key, 'an event id names one change of one flow');
        eventOf.set(a.body.id, key);
      }
      const ids = new Set(arrived(`/${name}`).map((a) => a.body.id));
      assert.equal(ids.size, expected[name].length, `${name}: one event id per change`);
    }
    /** After the restart (false: before the kill). */
    const late = (a: Arrival) => rx.received.indexOf(a) >= lateFrom;
    const inFlightArrivals = rx.received.filter((a) => a.body.id === inFlight);
    assert.ok(inFlightArrivals.some((a) => !late(a)) && inFlightArrivals.some(late), 'the attempt in flight at the kill was made again after the restart, with its event id');
    assert.ok(arrived('/f1').some((a) => !late(a)) && arrived('/f1').some(late), 'the flow answered 500 before the kill delivered after the restart');

    // The deliveries resource agrees: one succeeded delivery per event that arrived.
    const listed: { eventId: string; status: string }[] = [];
    for (let offset: number | null = 0; offset !== null; ) {
      const page = await ok('GET', `/api/flow-deliveries?${new URLSearchParams({ paging: JSON.stringify({ limit: 1000, offset }) })}`);
      listed.push(...page.data);
      offset = page.pagination.nextOffset;
    }
    assert.ok(listed.every((d) => d.status === 'succeeded'));
    assert.deepEqual(listed.map((d) => d.eventId).sort(), [...eventOf.keys()].sort());

    // The consumer, resuming from its stored cursor across the kill, saw every committed change once.
    const last = { a: feeds.a.at(-1)?.sequence ?? 0, b: feeds.b.at(-1)?.sequence ?? 0 };
    await until('the consumer caught up', () => cursors.a >= last.a && cursors.b >= last.b, 10_000);
    consuming = false;
    await consumer;
    assert.ok(consumerErrors > 0, 'the consumer saw the service go away');
    for (const table of ['a', 'b'] as const) {
      const sequences = feeds[table].map((c) => c.sequence);
      if (kind === 'sqlite') assert.deepEqual(sequences, Array.from({ length: last[table] }, (_, i) => i + 1), `${table}: sequences without gaps`);
      // PostgreSQL's sequence keeps the numbers a transaction took when the kill aborted it (docs/decisions.md).
      else assert.ok(sequences.every((n, i) => i === 0 ? n >= 1 : n > sequences[i - 1]), `${table}: sequences increasing`);
      assert.ok(feeds[table].every((c) => c.tableId === tables[table]));
      assert.deepEqual(consumed[table], feeds[table], `${table}: the consumer saw each committed change once, in order`);
    }

    // Every answered write is in the feed; the feed holds nothing that was not written.
    const count = (list: [string, string, string][]) => {
      const m = new Map<string, number>();
      for (const c of list) m.set(c.join(' '), (m.get(c.join(' ')) ?? 0) + 1);
      return m;
    };
    const inFeed = count([...feeds.a.map((c): [string, string, string] => ['a', c.type, c.rowId]), ...feeds.b.map((c): [string, string, string] => ['b', c.type, c.rowId])]);
    const acked = count(writes.filter((w) => w.acked).flatMap((w) => w.changes));
    const attempted = count(writes.flatMap((w) => w.changes));
    for (const [change, n] of acked) assert.ok((inFeed.get(change) ?? 0) >= n, `an answered write is in the feed: ${change}`);
    for (const [change, n] of inFeed) assert.ok((attempted.get(change) ?? 0) >= n, `the feed holds only what was written: ${change}`);

    // The rows are the feed replayed: each row as its last change left it, and no other.
    for (const table of ['a', 'b'] as const) {
      const replayed = new Map<string, unknown>();
      for (const c of feeds[table]) {
        if (c.type === 'delete') replayed.delete(c.rowId);
        else replayed.set(c.rowId, c.row);
      }
      const rows = new Map<string, unknown>((await allRows(overHttp(base), table)).map((r) => [r.id, r]));
      assert.deepEqual(rows, replayed, `${table}: the rows as the feed's changes left them`);
    }
    const unanswered = writes.filter((w) => !w.acked).length;
    const repeats = rx.received.length - eventOf.size;
    mark(`${feeds.a.length + feeds.b.length} changes, ${eventOf.size} events, ${repeats} repeated arrivals, ${unanswered} write(s) unanswered at the kill`);
  });
});
