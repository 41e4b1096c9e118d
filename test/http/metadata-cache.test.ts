import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { LISTENER_NAME } from '../../src/store/postgres/metadata-listener.ts';
import { TableCatalog } from '../../src/store/table-catalog.ts';
import { type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';

/**
 * The key and table caches (docs/decisions.md, "Metadata caches"): a metadata change is enforced on
 * the next request by the instance that made it and within one second by every other, whoever
 * made it; row writes leave the caches warm, so a warm single-row request is one query on PostgreSQL
 * (a write too: its change-log entry is written by the same statement).
 */

const BIN = fileURLToPath(new URL('../../bin/rowhouse.mjs', import.meta.url));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Asks `check` until it holds, failing after `ms` milliseconds. */
async function within(ms: number, what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) assert.fail(`not within ${ms} ms: ${what}`);
    await sleep(5);
  }
}

/** Until the instance trusts its caches (on PostgreSQL: its LISTEN connection is up). */
const trusted = (t: TestApp) => within(5000, 'the caches are trusted', () => t.database.metadataVersion?.() !== undefined);

/** A test-side session on the app's database (PostgreSQL). */
async function pgSession<T>(t: TestApp, work: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: t.config.databaseUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** The real CLI in a child process, configured for the app's database. */
function cli(t: TestApp, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('ROWHOUSE_') && !k.startsWith('NODE_TEST') && !['DATABASE_URL', 'NODE_OPTIONS'].includes(k)) env[k] = v;
  }
  Object.assign(env, { DATABASE_URL: t.config.databaseUrl, ROWHOUSE_DATA_DIR: t.scratch.dir, ROWHOUSE_LOG_LEVEL: 'warn' });
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  return new Promise((resolve) => {
    child.on('close', (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr });
    });
  });
}

eachDatabase('metadata caches', (kind) => {
  let a: TestApp;
  let b: TestApp;
  const statements = new Map<string, string[]>([['a', []], ['b', []]]);
  /** The statements an instance sent through the query builder while `work` ran. */
  async function sent<T>(instance: 'a' | 'b', work: () => Promise<T>): Promise<{ result: T; sql: string[] }> {
    const log = statements.get(instance) as string[];
    const start = log.length;
    const result = await work();
    return { result, sql: log.slice(start) };
  }
  const keyLookups = (sql: string[]) => sql.filter((s) => s.includes('from "rh_api_keys"')).length;
  /**
   * On PostgreSQL an instance's own metadata change reaches it again as a notification, just after
   * its commit, and empties its caches once more: wait for that before counting.
   */
  const settle = () => (kind === 'postgres' ? sleep(200) : Promise.resolve());

  before(async () => {
    a = await startApp(kind, {}, { onQuery: (sql) => statements.get('a')?.push(sql) });
    b = await startApp(kind, {}, { sharing: a, onQuery: (sql) => statements.get('b')?.push(sql) });
    await trusted(a);
    await trusted(b);
  });
  after(async () => {
    await b.close();
    await a.close();
  });

  it('a key revoked through instance A is refused by A at once and by instance B within one second', async () => {
    const made = await a.post('/api/api-keys', { name: 'shared' });
    assert.equal(made.status, 201, made.text);
    const key = made.body.key as string;
    for (const t of [a, b]) for (let i = 0; i < 3; i++) assert.equal((await t.get('/api/flows', { key })).status, 200);
    // B accepts it just before, from its cache (PostgreSQL shows it: no key lookup at all).
    const warm = await sent('b', () => b.get('/api/flows', { key }));
    assert.equal(warm.result.status, 200);
    if (kind === 'postgres') assert.equal(keyLookups(warm.sql), 0, warm.sql.join('\n'));

    const revoked = await a.put(`/api/api-keys/${made.body.id}`, { revokedAt: new Date().toISOString() });
    assert.equal(revoked.status, 200, revoked.text);
    expectError(await a.get('/api/flows', { key }), 401);
    await within(1000, 'B refuses the revoked key', async () => (await b.get('/api/flows', { key })).status === 401);
    expectError(await b.get('/api/flows', { key }), 401);
  });

  it('a field added through A is usable through B within one second; a table deleted through A is a 404 on B within one second', async () => {
    const made = await a.post('/api/tables', { code: 'shared', name: 'Shared', fields: [{ code: 'title', type: 'text' }] });
    assert.equal(made.status, 201, made.text);
    const rows = '/api/tables/shared/rows';
    assert.equal((await b.post(rows, { id: 'b-1', values: { title: 'from B' } })).status, 201);
    expectError(await b.post(rows, { values: { title: 'x', extra: 1 } }), 400);

    const fields = [...made.body.fields.map((f: { id: string }) => ({ id: f.id })), { code: 'extra', type: 'number' }];
    assert.equal((await a.put(`/api/tables/${made.body.id}`, { fields })).status, 200);
    assert.equal((await a.post(rows, { values: { title: 'from A', extra: 1 } })).status, 201);
    await within(1000, 'B writes the new field', async () => (await b.post(rows, { values: { title: 'from B', extra: 2 } })).status === 201);
    assert.equal((await b.get(`${rows}/b-1`)).body.values.extra, null);

    assert.equal((await b.get(`${rows}/b-1`)).status, 200);
    assert.equal((await a.delete(`/api/tables/${made.body.id}`)).status, 200);
    expectError(await a.get(`${rows}/b-1`), 404);
    await within(1000, 'B answers 404 for the deleted table', async () => (await b.get(`${rows}/b-1`)).status === 404);
    expectError(await b.post(rows, { values: { title: 'late' } }), 404);
  });

  it('a key revoked with `rowhouse api-keys revoke` in another process is refused within one second', async () => {
    const made = await a.post('/api/api-keys', { name: 'revoked by the CLI' });
    assert.equal(made.status, 201, made.text);
    const key = made.body.key as string;
    for (let i = 0; i < 3; i++) assert.equal((await a.get('/api/flows', { key })).status, 200);
    if (kind === 'postgres') assert.equal(keyLookups((await sent('a', () => a.get('/api/flows', { key }))).sql), 0, 'the key is cached');
    const done = await cli(a, ['api-keys', 'revoke', made.body.id]);
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /Revoked API key/);
    await within(1000, 'the server refuses the key the CLI revoked', async () => (await a.get('/api/flows', { key })).status === 401);
  });

  it('row writes and lastUsedAt signal no change; keys, members, tables and fields do', async () => {
    // What the triggers say, seen from outside: SQLite's counter, PostgreSQL's notifications.
    let listener: pg.Client | undefined;
    const heard: string[] = [];
    let counter: () => number;
    if (kind === 'sqlite') {
      const file = a.config.databaseUrl.slice('sqlite:'.length);
      counter = () => {
        const conn = new SqliteDatabase(file, { readonly: true });
        try {
          return (conn.prepare('select n from rh_metadata_version').get() as { n: number }).n;
        } finally {
          conn.close();
        }
      };
    } else {
      listener = new pg.Client({ connectionString: a.config.databaseUrl });
      await listener.connect();
      listener.on('notification', (n) => heard.push(n.payload ?? ''));
      await listener.query('listen rowhouse_meta');
      counter = () => heard.length;
    }
    /** How many signals `work` caused (notifications arrive after the commit: wait for them). */
    const signals = async (work: () => Promise<unknown>) => {
      await settle();
      const before = counter();
      await work();
      await settle();
      return counter() - before;
    };
    try {
      const table = await a.post('/api/tables', { code: 'signals', name: 'Signals', fields: [{ code: 'n', type: 'number' }] });
      assert.equal(table.status, 201, table.text);
      const rows = '/api/tables/signals/rows';
      assert.equal(
        await signals(async () => {
          assert.equal((await a.post(rows, { id: 'r', values: { n: 1 } })).status, 201);
          assert.equal((await a.patch(`${rows}/r`, { values: { n: 2 } })).status, 200);
          assert.equal((await a.post(rows, { id: 'r', values: { n: 3 }, options: { upsert: true } })).status, 200);
          assert.equal((await a.post('/api/tables/signals/rows-bulk', { data: [{ values: { n: 4 } }] })).status, 201);
          assert.equal((await a.delete(`${rows}/r`)).status, 204);
        }),
        0,
        'row writes',
      );
      const key = (await a.post('/api/api-keys', { name: 'fresh' })).body;
      assert.equal(
        await signals(async () => {
          // First use writes lastUsedAt.
          assert.equal((await a.get('/api/flows', { key: key.key })).status, 200);
          await a.database.db.updateTable('rh_api_keys').set({ lastUsedAt: new Date(0).toISOString() }).where('id', '=', key.id).execute();
        }),
        0,
        'lastUsedAt writes',
      );
      for (const [what, change] of [
        ['a key change', () => a.put(`/api/api-keys/${key.id}`, { name: 'renamed' })],
        ['a new member', () => a.post('/api/members', { name: 'Someone' })],
        ['a table change', () => a.put(`/api/tables/${table.body.id}`, { name: 'Renamed' })],
        ['a field change', () => a.put(`/api/tables/${table.body.id}`, { fields: [{ id: table.body.fields[0].id, name: 'Number' }] })],
      ] as const) {
        assert.ok((await signals(change)) > 0, `${what} signals`);
      }
    } finally {
      await listener?.end();
    }
  });

  it("a table's cached definition keeps its identity until the table changes", async () => {
    const made = await a.post('/api/tables', { code: 'ident', name: 'Ident', fields: [{ code: 'n', type: 'number' }] });
    assert.equal(made.status, 201, made.text);
    const catalog = new TableCatalog(a.database);
    const first = await catalog.find(a.database.db, 'ident');
    assert.ok(first);
    assert.equal((await a.post('/api/tables/ident/rows', { values: { n: 1 } })).status, 201);
    assert.equal((await a.post('/api/tables', { code: 'ident_other', name: 'Other' })).status, 201);
    assert.equal(await catalog.find(a.database.db, 'ident'), first, 'unchanged: the same object');
    assert.equal((await a.put(`/api/tables/${made.body.id}`, { fields: [{ id: first.fields[0].id }, { code: 'm', type: 'text' }] })).status, 200);
    const changed = await catalog.find(a.database.db, 'ident');
    assert.notEqual(changed, first);
    assert.deepEqual(changed?.fields.map((f) => f.code), ['n', 'm']);
  });

  it('PostgreSQL: a warm single-row request is one query, before and after row writes', { skip: kind !== 'postgres' && 'PostgreSQL only' }, async () => {
    const made = await a.post('/api/tables', {
      code: 'counted', name: 'Counted', fields: [{ code: 'title', type: 'text', required: true }, { code: 'n', type: 'number' }],
    });
    assert.equal(made.status, 201, made.text);
    const rows = '/api/tables/counted/rows';
    assert.equal((await a.post(rows, { id: 'seed', values: { title: 'seed' } })).status, 201);
    const fresh = (await a.post('/api/api-keys', { name: 'counted' })).body.key as string;
    await settle();
    assert.equal((await a.get(`${rows}/seed`)).status, 200);
    const cases: [string, () => Promise<{ status: number }>, number][] = [
      ['get', () => a.get(`${rows}/seed`), 200],
      ['create', () => a.post(rows, { id: 'c', values: { title: 'c' } }), 201],
      ['get after a create', () => a.get(`${rows}/seed`), 200],
      ['patch', () => a.patch(`${rows}/c`, { values: { n: 1 } }), 200],
      ['upsert creating', () => a.post(rows, { id: 'u', values: { title: 'u', n: 1 }, options: { upsert: true } }), 201],
      ['upsert updating, every required field given', () => a.post(rows, { id: 'u', values: { title: 'u2' }, options: { upsert: true } }), 200],
      ['upsert updating, a required field left out', () => a.post(rows, { id: 'u', values: { n: 2 }, options: { upsert: true } }), 200],
      ['delete', () => a.delete(`${rows}/c`), 204],
      ['get after every write', () => a.get(`${rows}/seed`), 200],
    ];
    for (const [what, request, status] of cases) {
      const { result, sql } = await sent('a', request);
      assert.equal(result.status, status, what);
      // One statement, no transaction around it; a write writes its change-log entry in it. Nothing is looked up.
      assert.equal(sql.length, 1, `${what}: ${sql.join('\n')}`);
      if (!what.startsWith('get')) assert.match(sql[0], /insert into rh_changes/, what);
    }
    // A key's first use writes lastUsedAt, which keeps the key cached: its next use looks nothing up.
    const first = await sent('a', () => a.get(`${rows}/seed`, { key: fresh }));
    assert.equal(first.sql.length, 3, first.sql.join('\n'));
    await settle();
    const next = await sent('a', () => a.get(`${rows}/seed`, { key: fresh }));
    assert.equal(next.sql.length, 1, next.sql.join('\n'));
  });

  it('PostgreSQL: when the LISTEN connection drops the caches are bypassed at once, and used again once it listens', { skip: kind !== 'postgres' && 'PostgreSQL only' }, async () => {
    const made = await a.post('/api/api-keys', { name: 'revoked while deaf' });
    const key = made.body.key as string;
    for (let i = 0; i < 3; i++) assert.equal((await a.get('/api/flows', { key })).status, 200);
    assert.equal(keyLookups((await sent('a', () => a.get('/api/flows', { key }))).sql), 0, 'the key is cached');

    const listeners = `select pid from pg_stat_activity where application_name = '${LISTENER_NAME}' and datname = current_database()`;
    await pgSession(a, async (admin) => {
      assert.equal((await admin.query(listeners)).rowCount, 2, 'one LISTEN session per instance');
      // Both instances' sessions go (B reconnects as A does).
      await admin.query(`select pg_terminate_backend(pid) from (${listeners}) l`);
      await within(1000, 'A stops trusting its caches', () => a.database.metadataVersion?.() === undefined);
      // Revoked while nobody listens: the notification is lost, the bypass refuses the key anyway.
      await admin.query('update rh_api_keys set "revokedAt" = now() where id = $1', [made.body.id]);
    });
    await within(1000, 'A refuses the key revoked meanwhile', async () => (await a.get('/api/flows', { key })).status === 401);

    await trusted(a);
    assert.equal((await a.get('/api/tables/none/rows/x')).status, 404);
    const owner = await sent('a', () => a.get('/api/flows'));
    assert.equal(owner.sql.length, 1, `caching resumed: ${owner.sql.join('\n')}`);
    await trusted(b);
  });

  it('PostgreSQL: close() ends the LISTEN session', { skip: kind !== 'postgres' && 'PostgreSQL only' }, async () => {
    const c = await startApp(kind, {}, { sharing: a });
    await trusted(c);
    const count = `select count(*)::int as n from pg_stat_activity where application_name = '${LISTENER_NAME}' and datname = current_database()`;
    await pgSession(a, async (admin) => {
      const before = (await admin.query(count)).rows[0].n as number;
      await c.close();
      await within(1000, 'its LISTEN session is gone', async () => (await admin.query(count)).rows[0].n === before - 1);
    });
  });
});
