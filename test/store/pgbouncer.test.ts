import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { TEST_KEY, type ScratchDatabase, eachDatabase, scratchDatabase } from '../support/harness.ts';
// @ts-expect-error: a plain JavaScript module of the test setup, without type declarations
import { findPgbouncer, startPgbouncer } from '../support/pgbouncer-server.mjs';
import { type Instance as Server, assertQuiet, buildProject, serveInstance, stopAll } from '../support/served.ts';
import { type Answer, callJson } from '../support/wire.ts';
import type { PreparedStatementsMode } from '../../src/config.ts';
import { openDatabase } from '../../src/store/database.ts';
import { migrate } from '../../src/store/migrations.ts';
import { PreparedStatements } from '../../src/store/postgres/prepared-statements.ts';

/**
 * Issue 27 item 4: Rowhouse behind PgBouncer (Debian's package, 1.18 here: no prepared statements
 * of its own) in transaction mode, with a pool of two server connections per database, so that
 * one client's transactions run on different backends and one backend serves many clients:
 *
 * - named prepared statements: by name on a direct connection (as fast as before), unnamed behind
 *   the pooler (`auto`), and by name there (`on`) they fail as they did before this issue;
 * - LISTEN: through the pooler the listener stays off (and says so, naming DATABASE_LISTEN_URL),
 *   so the metadata caches are bypassed rather than stale; with DATABASE_LISTEN_URL it listens;
 * - the session's time zone, set once per connection, holds on every backend (PgBouncer tracks it);
 * - two `rowhouse serve` processes through the pooler (DATABASE_LISTEN_URL direct), started at once
 *   on an empty database: rows CRUD, list paging with cursors across both, exports (keyset pages
 *   and the one-cursor read), bulk and batch writes, concurrent writers on both with the feed's
 *   exactly-once numbering, a long poll woken by the other instance, an API key revoked and a
 *   field added through one instance enforced by the other within a second, and an import; no
 *   5xx, nothing on stderr.
 *
 * PostgreSQL only. Where the pgbouncer binary is missing it is skipped, except on CI (CI=true),
 * which installs it (.ci/run): there it fails.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Row = Record<string, any>;

interface Bouncer {
  port: number;
  url(directUrl: string): string;
  log(): string;
  stop(): Promise<void>;
}

const PUBLIC_URL = 'http://rowhouse.test';
/** Issue 12 item 3: what one instance changes, every other enforces within one second. */
const OTHER_INSTANCE_MS = 1000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const missing = findPgbouncer() === null;
function skipReason(kind: string): string | false {
  if (kind !== 'postgres') return 'PostgreSQL only: PgBouncer pools PostgreSQL connections';
  if (missing && process.env.CI !== 'true') return 'pgbouncer is not installed here (apt-get install pgbouncer; CI installs it and runs this)';
  return false;
}

/** Polls `check` (what is still wrong, [] once right) until it holds or `limitMs` passed: how long it took, or null. */
async function enforced(limitMs: number, check: () => Promise<string[]>): Promise<{ ms: number | null; last: string[] }> {
  const since = performance.now();
  for (;;) {
    const last = await check();
    const ms = performance.now() - since;
    if (last.length === 0) return { ms, last };
    if (ms > limitMs) return { ms: null, last };
    await sleep(20);
  }
}

eachDatabase('PgBouncer in transaction mode', (kind) => {
  describe('through pgbouncer', { skip: skipReason(kind) }, () => {
    let bouncer: Bouncer;
    const scratches: ScratchDatabase[] = [];
    const scratch = async () => {
      const s = await scratchDatabase('postgres');
      scratches.push(s);
      return s;
    };

    before(async () => {
      assert.ok(!missing, 'CI=true: pgbouncer must be installed (.ci/run installs it)');
      bouncer = await startPgbouncer(process.env.ROWHOUSE_TEST_PG_URL as string, { poolSize: 2 });
    });
    after(async () => {
      await stopAll();
      await bouncer?.stop();
      for (const s of scratches) await s.drop();
    });

    describe('named prepared statements', () => {
      const TEXT = 'select $1::int + 1 as n';
      /** Runs the marked statement on `clients` connections at once, `rounds` times each: answers the names the last connection holds prepared. */
      async function run(url: string, mode: PreparedStatementsMode, clients: number, rounds: number): Promise<string[]> {
        const statements = new PreparedStatements(mode);
        statements.mark(TEXT);
        const pool = new pg.Pool({ connectionString: url, max: clients });
        const wrapped = statements.pool(pool);
        try {
          const connections = await Promise.all(Array.from({ length: clients }, () => wrapped.connect()));
          try {
            for (let round = 0; round < rounds; round++) {
              // Settled, all of them, before the connections go back.
              const answers = await Promise.allSettled(connections.map((c, i) => c.query<{ n: number }>(TEXT, [i])));
              for (const a of answers) if (a.status === 'rejected') throw a.reason;
              assert.deepEqual(
                answers.map((a) => (a.status === 'fulfilled' ? a.value.rows[0].n : null)),
                connections.map((_, i) => i + 1),
              );
            }
            const held = await connections[0].query<{ name: string }>("select name from pg_prepared_statements where name like 'rh\\_%'", []);
            return held.rows.map((r) => r.name);
          } finally {
            for (const c of connections) c.release();
          }
        } finally {
          await pool.end();
        }
      }

      it('run by name on a direct connection (auto), unnamed there when off', async () => {
        const db = await scratch();
        assert.deepEqual(await run(db.url, 'auto', 1, 3), ['rh_1'], 'prepared once, on the connection');
        assert.deepEqual(await run(db.url, 'off', 1, 3), []);
      });

      it('run unnamed through pgbouncer (auto): none is prepared, and none fails', async () => {
        const db = await scratch();
        assert.deepEqual(await run(bouncer.url(db.url), 'auto', 6, 5), []);
      });

      it('run by name through pgbouncer (on), six clients over two backends fail: why auto leaves names out there', async () => {
        const db = await scratch();
        await assert.rejects(run(bouncer.url(db.url), 'on', 6, 3), /prepared statement "rh_1" (does not exist|already exists)/);
      });
    });

    it('LISTEN through pgbouncer stays off (caches bypassed) with a warning naming DATABASE_LISTEN_URL; a direct DATABASE_LISTEN_URL listens', { timeout: 30_000 }, async () => {
      const db = await scratch();
      const warnings: string[] = [];
      const onWarning = (w: Error) => warnings.push(w.message);
      process.on('warning', onWarning);
      const pooled = await openDatabase(bouncer.url(db.url));
      const listening = await openDatabase(bouncer.url(db.url), { databaseListenUrl: db.url });
      try {
        // Migration 4's triggers notify the listeners.
        await migrate(pooled.db, pooled.dialect);
        assert.equal(pooled.metadataVersion(), undefined, 'not listening yet');
        assert.equal(listening.metadataVersion(), undefined, 'not listening yet');
        const heard = await enforced(10_000, async () => [
          ...(warnings.some((w) => w.includes('DATABASE_LISTEN_URL')) ? [] : ['no warning yet']),
          ...(listening.metadataVersion() === undefined ? ['the direct listener is not listening yet'] : []),
        ]);
        assert.notEqual(heard.ms, null, heard.last.join('; '));
        assert.match(warnings.join('\n'), /connection pooler.*LISTEN.*DATABASE_LISTEN_URL/s);
        assert.equal(warnings.length, 1, 'one warning, from the pooled listener only');
        // Never listening: the metadata caches are bypassed for good (slower, never stale).
        await sleep(300);
        assert.equal(pooled.metadataVersion(), undefined);
        // The direct listener hears a change committed through the pooler.
        const before = listening.metadataVersion() as number;
        // (The triggers fire once a statement, whatever rows it changed.)
        await sql`update rh_members set name = name`.execute(pooled.db);
        const moved = await enforced(5000, async () => (listening.metadataVersion() !== before ? [] : ['no notification']));
        assert.notEqual(moved.ms, null, 'the notification reached the direct listener');
      } finally {
        process.off('warning', onWarning);
        await pooled.close();
        await listening.close();
      }
    });

    it("the connections' UTC holds on every backend, whatever another client of the pooler sets", async () => {
      const db = await scratch();
      const neighbour = new pg.Pool({ connectionString: bouncer.url(db.url), max: 4 });
      const database = await openDatabase(bouncer.url(db.url), { databaseListenUrl: db.url });
      try {
        // The neighbour's SET (a session's, outside any transaction) lands on the backends of the pool.
        await Promise.all(Array.from({ length: 4 }, () => neighbour.query("set time zone 'Asia/Tokyo'")));
        for (let round = 0; round < 5; round++) {
          const zones = await Promise.all(Array.from({ length: 6 }, () => sql<{ TimeZone: string }>`show time zone`.execute(database.db)));
          assert.deepEqual(
            zones.map((z) => z.rows[0].TimeZone),
            zones.map(() => 'UTC'),
          );
          const theirs = await Promise.all(Array.from({ length: 4 }, () => neighbour.query('show time zone')));
          assert.deepEqual(
            theirs.map((z) => z.rows[0].TimeZone),
            theirs.map(() => 'Asia/Tokyo'),
          );
        }
      } finally {
        await neighbour.end();
        await database.close();
      }
    });

    describe('two rowhouse serve processes through pgbouncer', () => {
      let project: string;
      let a: Server;
      let b: Server;
      const serve = (name: string, settings: Record<string, string>): Promise<Server> => serveInstance(project, 'pgbouncer', name, settings);
      async function call(server: Server, method: string, target: string, body?: unknown, key = TEST_KEY): Promise<Answer> {
        const r = await callJson(server.base, method, target, body, key);
        assert.ok(r.status < 500, `${server.name} ${method} ${target}: ${r.status} ${r.text.slice(0, 500)}\n${server.stderr().slice(0, 2000)}`);
        return r;
      }
      function at(server: Server, url: string): string {
        const u = new URL(url);
        assert.equal(u.origin, PUBLIC_URL, url);
        return u.pathname + u.search;
      }

      before(async () => {
        project = buildProject('rowhouse-pgbouncer-build-');
        const db = await scratch();
        const settings = { DATABASE_URL: bouncer.url(db.url), DATABASE_LISTEN_URL: db.url, ROWHOUSE_API_KEY: TEST_KEY, ROWHOUSE_PUBLIC_URL: PUBLIC_URL };
        // At once, on an empty database: both migrate and bootstrap through the pooler.
        [a, b] = await Promise.all([serve('A', settings), serve('B', settings)]);
      });

      const FIELDS = [
        { code: 'title', type: 'text', required: true },
        { code: 'amount', type: 'number' },
        { code: 'status', type: 'select', options: { choices: ['new', 'paid'] } },
        { code: 'at', type: 'dateTime' },
        { code: 'rec', type: 'record' },
      ];

      it('rows CRUD, bulk and batch writes, list paging and exports, across both instances', { timeout: 90_000 }, async () => {
        assert.equal((await call(a, 'POST', '/api/tables', { code: 'orders', name: 'Orders', fields: FIELDS })).status, 201);
        assert.equal((await call(b, 'POST', '/api/tables', { code: 'notes', name: 'Notes', fields: [{ code: 'text', type: 'text' }] })).status, 201);

        // One row: created on A, read and changed on B, deleted on A, gone on B.
        const created = await call(a, 'POST', '/api/tables/orders/rows', { id: 'one', values: { title: 'first', amount: 5, at: '2024-05-01T10:30:00.125Z', rec: { a: [1] } } });
        assert.equal(created.status, 201, created.text);
        const read = await call(b, 'GET', '/api/tables/orders/rows/one');
        assert.equal(read.status, 200, read.text);
        assert.deepEqual(read.body.values, created.body.values);
        assert.equal(read.body.values.at, '2024-05-01T10:30:00.125Z');
        const patched = await call(b, 'PATCH', '/api/tables/orders/rows/one', { values: { amount: 6 } });
        assert.equal(patched.status, 200, patched.text);
        assert.equal((await call(a, 'GET', '/api/tables/orders/rows/one')).body.values.amount, 6);
        assert.equal((await call(a, 'DELETE', '/api/tables/orders/rows/one')).status, 204);
        assert.equal((await call(b, 'GET', '/api/tables/orders/rows/one')).status, 404);
        // Many single-row reads and writes in turn, on both: each runs on whichever backend is free.
        for (let i = 0; i < 20; i++) {
          const s = i % 2 === 0 ? a : b;
          assert.equal((await call(s, 'POST', '/api/tables/orders/rows', { id: `u${i}`, values: { title: `u ${i}` } })).status, 201);
          assert.equal((await call(s === a ? b : a, 'GET', `/api/tables/orders/rows/u${i}`)).body.values.title, `u ${i}`);
        }

        // Bulk on B.
        const rows = Array.from({ length: 300 }, (_, i) => ({
          id: `o-${String(i).padStart(3, '0')}`,
          values: { title: `order ${i}`, amount: i % 7 === 0 ? null : (i * 37) % 50, status: i % 3 === 0 ? 'paid' : 'new', at: new Date(Date.UTC(2024, 0, 1) + i * 3_600_123).toISOString() },
        }));
        const bulk = await call(b, 'POST', '/api/tables/orders/rows-bulk', { data: rows });
        assert.equal(bulk.status, 201, bulk.text);

        // A batch on A over both tables, in one transaction.
        const batch = await call(a, 'POST', '/api/rows-batch', {
          operations: [
            { type: 'create', tableId: 'notes', id: 'n1', values: { text: 'hello' } },
            { type: 'update', tableId: 'orders', id: 'o-001', values: { title: 'order 1 (batched)' } },
            { type: 'delete', tableId: 'orders', id: 'u0' },
            { type: 'create', tableId: 'notes', id: 'n2', values: { text: 'world' } },
          ],
        });
        assert.equal(batch.status, 200, batch.text);
        assert.equal((await call(b, 'GET', '/api/tables/orders/rows/o-001')).body.values.title, 'order 1 (batched)');
        assert.equal((await call(b, 'GET', '/api/tables/orders/rows/u0')).status, 404);
        assert.equal((await call(b, 'GET', '/api/tables/notes/rows/n2')).body.values.text, 'world');
        rows[1].values.title = 'order 1 (batched)';

        // A filtered, sorted list walked by its cursors, each page from the other instance.
        const expected = rows
          .filter((r) => r.values.status === 'paid')
          .sort((x, y) => {
            const [p, q] = [x.values.amount, y.values.amount];
            if (p !== q) return p === null ? 1 : q === null ? -1 : (q as number) - (p as number);
            return x.id < y.id ? -1 : 1;
          })
          .map((r) => r.id);
        const query = new URLSearchParams({
          pageSize: '7',
          filter: JSON.stringify({ values: { status: { _eq: 'paid' } } }),
          sort: JSON.stringify([{ amount: { direction: 'desc', nulls: 'nullsLast' } }]),
        });
        const ids: string[] = [];
        let page = await call(a, 'GET', `/api/tables/orders/rows?${query}`);
        for (let n = 1; ; n++) {
          assert.equal(page.status, 200, page.text);
          ids.push(...page.body.data.map((r: Row) => r.id));
          if (!page.body.nextUrl) break;
          const s = n % 2 === 0 ? a : b;
          page = await call(s, 'GET', at(s, page.body.nextUrl));
        }
        assert.deepEqual(ids, expected);

        // Exports: in a sort no index gives (one cursor, in one transaction), and in the default order (keyset pages).
        const sorted = await call(b, 'GET', `/api/tables/orders/rows-export?${new URLSearchParams({ format: 'jsonl', encoding: 'utf8', newline: 'lf', filter: query.get('filter') as string, sort: query.get('sort') as string })}`);
        assert.equal(sorted.status, 200, sorted.text);
        assert.deepEqual(sorted.text.trim().split('\n').map((l) => JSON.parse(l).id), expected);
        const everything = await call(a, 'GET', '/api/tables/orders/rows-export?format=jsonl&encoding=utf8&newline=lf');
        assert.equal(everything.status, 200, everything.text);
        const exported = everything.text.trim().split('\n').map((l) => JSON.parse(l));
        const all = [...rows.map((r) => r.id), ...Array.from({ length: 19 }, (_, i) => `u${i + 1}`)].sort();
        assert.deepEqual(exported.map((r: Row) => r.id).sort(), all, 'every row once');
        assert.equal(exported.find((r: Row) => r.id === 'o-005').values.at, rows[5].values.at);
        // Two exports at once, each holding a backend for its cursor, while single-row reads go on.
        const [x1, x2, ...reads] = await Promise.all([
          call(a, 'GET', `/api/tables/orders/rows-export?${new URLSearchParams({ format: 'csv', encoding: 'utf8', newline: 'lf', sort: query.get('sort') as string })}`),
          call(b, 'GET', `/api/tables/orders/rows-export?${new URLSearchParams({ format: 'csv', encoding: 'utf8', newline: 'lf', sort: query.get('sort') as string })}`),
          ...Array.from({ length: 10 }, (_, i) => call(i % 2 ? a : b, 'GET', `/api/tables/orders/rows/o-${String(i).padStart(3, '0')}`)),
        ]);
        assert.equal(x1.status, 200, x1.text);
        assert.equal(x2.text, x1.text);
        assert.equal(x1.text.trim().split('\n').length, all.length + 1, 'a header and every row');
        assert.ok(reads.every((r) => r.status === 200));
        assertQuiet(a, b);
      });

      it('concurrent writers on both instances: every write once in the feed, numbered without gaps; a long poll wakes for the other instance', { timeout: 90_000 }, async () => {
        assert.equal((await call(a, 'POST', '/api/tables', { code: 'busy', name: 'busy', fields: [{ code: 'n', type: 'number' }] })).status, 201);
        const writes = Array.from({ length: 80 }, (_, i) => call(i % 2 === 0 ? a : b, 'POST', '/api/tables/busy/rows', { id: `w${i}`, values: { n: i } }));
        const patches = Array.from({ length: 20 }, (_, i) => sleep(5 * i).then(() => call(i % 2 === 0 ? b : a, 'POST', '/api/tables/busy/rows', { id: `p${i % 5}`, values: { n: i }, options: { upsert: true } })));
        const answers = await Promise.all([...writes, ...patches]);
        assert.ok(answers.slice(0, 80).every((r) => r.status === 201), answers.map((r) => r.status).join(' '));
        assert.ok(answers.slice(80).every((r) => r.status === 200 || r.status === 201), answers.map((r) => r.status).join(' '));

        const feed = await call(b, 'GET', '/api/tables/busy/changes?limit=1000');
        assert.equal(feed.status, 200, feed.text);
        const changes: Row[] = feed.body.data;
        assert.equal(changes.length, 100, 'each write once');
        assert.deepEqual(changes.map((c) => c.sequence), changes.map((_, i) => changes[0].sequence + i), 'in sequence, none skipped');
        assert.deepEqual(changes.filter((c) => c.rowId.startsWith('w')).map((c) => c.rowId).sort(), Array.from({ length: 80 }, (_, i) => `w${i}`).sort());
        const last = new Map(changes.map((c) => [c.rowId, c]));
        for (let k = 0; k < 5; k++) {
          const row = await call(a, 'GET', `/api/tables/busy/rows/p${k}`);
          assert.equal(row.body.values.n, last.get(`p${k}`)?.row.values.n, `p${k}: the feed's last entry is the row as it stands`);
        }

        let end = feed.body.nextCursor;
        for (const [waiter, writer] of [[b, a], [a, b]] as const) {
          const polled = call(waiter, 'GET', `/api/tables/busy/changes?after=${end}&wait=10`);
          await sleep(300);
          assert.equal((await call(writer, 'PATCH', '/api/tables/busy/rows/w1', { values: { n: Math.random() } })).status, 200);
          const written = performance.now();
          const woke = await polled;
          const ms = performance.now() - written;
          assert.equal(woke.status, 200, woke.text);
          assert.deepEqual(woke.body.data.map((c: Row) => [c.type, c.rowId]), [['update', 'w1']]);
          assert.ok(ms < OTHER_INSTANCE_MS, `${waiter.name}'s long poll answered ${ms.toFixed(0)} ms after ${writer.name}'s write`);
          end = woke.body.nextCursor;
        }
        assertQuiet(a, b);
      });

      it('metadata changed through one instance is enforced by the other within a second (its LISTEN on DATABASE_LISTEN_URL)', { timeout: 60_000 }, async () => {
        const made = await call(a, 'POST', '/api/tables', { code: 'meta', name: 'meta', fields: [{ code: 'title', type: 'text' }] });
        assert.equal(made.status, 201, made.text);
        const key = await call(a, 'POST', '/api/api-keys', { name: 'short-lived' });
        assert.equal(key.status, 201, key.text);
        const accepted = async (s: Server) => (await call(s, 'GET', '/api/tables/meta', undefined, key.body.key)).status;
        // B knows the key (from now on, from its cache).
        for (const s of [b, b, a]) assert.equal(await accepted(s), 200);
        assert.equal((await call(a, 'PUT', `/api/api-keys/${key.body.id}`, { revokedAt: new Date().toISOString() })).status, 200);
        assert.equal(await accepted(a), 401, 'A refuses the key it revoked');
        const revoked = await enforced(1500, async () => ((await accepted(b)) === 401 ? [] : ['B still takes the key']));
        assert.ok(revoked.ms !== null && revoked.ms <= OTHER_INSTANCE_MS, `B refused the revoked key ${revoked.ms === null ? 'not within 1.5 s' : `after ${revoked.ms.toFixed(0)} ms`}`);

        // A field added through A: B writes it.
        assert.equal((await call(b, 'POST', '/api/tables/meta/rows', { id: 'm1', values: { title: 'x' } })).status, 201);
        const put = await call(a, 'PUT', '/api/tables/meta', { fields: [{ id: made.body.fields[0].id }, { code: 'added', type: 'text' }] });
        assert.equal(put.status, 200, put.text);
        const added = await enforced(1500, async () => {
          const r = await call(b, 'PATCH', '/api/tables/meta/rows/m1', { values: { added: 'y' } });
          return r.status === 200 ? [] : [`B answered ${r.status}`];
        });
        assert.ok(added.ms !== null && added.ms <= OTHER_INSTANCE_MS, `B wrote the added field ${added.ms === null ? 'not within 1.5 s' : `after ${added.ms.toFixed(0)} ms`}: ${added.last.join('; ')}`);
        assertQuiet(a, b);
      });

      it('an import through one instance, read through the other', { timeout: 60_000 }, async () => {
        assert.equal((await call(b, 'POST', '/api/tables', { code: 'imported', name: 'imported', fields: FIELDS })).status, 201);
        const lines = ['id,title,amount,status,at'];
        for (let i = 0; i < 500; i++) lines.push(`i${i},"row, ${i}",${i / 4},${i % 2 ? 'paid' : 'new'},2024-03-0${1 + (i % 9)}T12:00:00.000Z`);
        const res = await fetch(`${a.base}/api/tables/imported/rows-import?format=csv&encoding=utf8`, {
          method: 'POST',
          headers: { 'x-api-key': TEST_KEY, 'content-type': 'text/csv' },
          body: `${lines.join('\r\n')}\r\n`,
        });
        const text = await res.text();
        assert.equal(res.status, 200, text);
        assert.equal(JSON.parse(text).created, 500);
        const i7 = await call(b, 'GET', '/api/tables/imported/rows/i7');
        assert.deepEqual(i7.body.values, { title: 'row, 7', amount: 1.75, status: 'paid', at: '2024-03-08T12:00:00.000Z', rec: null });
        const paid = await call(b, 'GET', `/api/tables/imported/rows-export?${new URLSearchParams({ format: 'jsonl', encoding: 'utf8', newline: 'lf', filter: JSON.stringify({ values: { status: { _eq: 'paid' } } }) })}`);
        assert.equal(paid.status, 200, paid.text);
        assert.equal(paid.text.trim().split('\n').length, 250);
        assertQuiet(a, b);
      });
    });
  });
});
