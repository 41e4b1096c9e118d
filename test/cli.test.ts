import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { hashApiKey } from '../src/domain/api-key.ts';
import { MIGRATION_VERSIONS } from '../src/store/migrations.ts';
import { scratchDatabase } from './support/harness.ts';
import { childEnv } from './support/served.ts';
import { freePort } from './support/wire.ts';

// The real CLI, as `npm start` runs it, in child processes.
const BIN = fileURLToPath(new URL('../bin/rowhouse.mjs', import.meta.url));
const GENERATED_KEY = /rh_[0-9A-Za-z]{40}/g;
const HAS_PG = Boolean(process.env.ROWHOUSE_TEST_PG_URL);

const tempDirs: string[] = [];
function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-cli-'));
  tempDirs.push(dir);
  return dir;
}
after(() => {
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

interface Result {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function spawnCli(args: string[], env: Record<string, string>, cwd: string): ChildProcess {
  return spawn(process.execPath, [BIN, ...args], { cwd, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Runs a command to completion (killed after 15 s). */
function run(args: string[], env: Record<string, string> = {}, cwd = tempDir()): Promise<Result> {
  const child = spawnCli(args, env, cwd);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.on('data', (d) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

interface Served {
  child: ChildProcess;
  output(): string;
  stderr(): string;
  exited: Promise<Result>;
  /** Sends the signal and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<Result>;
}

/** Starts `rowhouse serve` and waits until it says it is listening. */
async function serve(args: string[], env: Record<string, string>, cwd = tempDir()): Promise<Served> {
  const child = spawnCli(['serve', ...args], env, cwd);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.on('data', (d) => (stderr += d));
  // A start that hangs is killed; a running server lives until stop().
  let killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const exited = new Promise<Result>((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(killer);
      resolve({ code, signal, stdout, stderr });
    });
  });
  await new Promise<void>((resolve, reject) => {
    const check = () => {
      if (stdout.includes('Rowhouse is listening on')) {
        child.stdout?.off('data', check);
        clearTimeout(killer);
        resolve();
      }
    };
    child.stdout?.on('data', check);
    exited.then((r) => reject(new Error(`serve exited (${r.code}) before listening:\n${r.stdout}\n${r.stderr}`)));
  });
  return {
    child,
    output: () => stdout,
    stderr: () => stderr,
    exited,
    stop(signal = 'SIGTERM') {
      child.kill(signal);
      // The shutdown's own bound is 10 s; past that it has hung.
      killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      return exited;
    },
  };
}


/** Whether a TCP connection to host:port is refused. */
function refused(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

function theKey(output: string): string {
  const keys = output.match(GENERATED_KEY) ?? [];
  assert.equal(keys.length, 1, `expected exactly one key in the output:\n${output}`);
  return keys[0];
}

async function getJson(url: string, key?: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { headers: key ? { 'x-api-key': key } : {} });
  return { status: res.status, body: await res.json() };
}

describe('rowhouse CLI', { concurrency: 2 }, () => {
  describe('rowhouse serve', () => {
    it('on an empty data dir creates ./data/rowhouse.db and prints a working key once; a second start prints none', async () => {
      const cwd = tempDir();
      const port = await freePort();
      const first = await serve([], { PORT: String(port) }, cwd);
      let key: string;
      try {
        assert.ok(fs.existsSync(path.join(cwd, 'data', 'rowhouse.db')), 'the default data dir holds the database');
        key = theKey(first.output());
        assert.ok(first.output().includes(`http://127.0.0.1:${port}`));
        const base = `http://127.0.0.1:${port}`;

        const health = await getJson(`${base}/healthz`);
        assert.deepEqual(health, { status: 200, body: { status: 'ok' } });
        assert.deepEqual(await getJson(`${base}/readyz`), { status: 200, body: { status: 'ok' } });
        const refusedReply = await getJson(`${base}/api/flows`);
        assert.equal(refusedReply.status, 401);
        assert.equal(refusedReply.body.statusCode, 401);

        const listed = await getJson(`${base}/api/flows`, key);
        assert.equal(listed.status, 200);
        assert.deepEqual(listed.body.data, []);
        const created = await fetch(`${base}/api/flows`, {
          method: 'POST',
          headers: { 'x-api-key': key, 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'first' }),
        });
        assert.equal(created.status, 201);
        assert.ok(created.headers.get('x-request-id'));
      } finally {
        const exit = await first.stop();
        assert.equal(exit.code, 0, exit.stderr);
      }

      const second = await serve([], { PORT: String(port) }, cwd);
      try {
        assert.deepEqual(second.output().match(GENERATED_KEY), null, `a second start printed a key:\n${second.output()}`);
        const listed = await getJson(`http://127.0.0.1:${port}/api/flows`, key);
        assert.equal(listed.status, 200);
        assert.equal(listed.body.data.length, 1, 'the data survived the restart');
      } finally {
        assert.equal((await second.stop()).code, 0);
      }
    });

    it('refuses a 15-character ROWHOUSE_API_KEY with a clear message and a non-zero exit', async () => {
      const cwd = tempDir();
      const port = await freePort();
      const r = await run(['serve'], { PORT: String(port), ROWHOUSE_API_KEY: 'x'.repeat(15) }, cwd);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /ROWHOUSE_API_KEY must be at least 16 characters/);
      assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
      assert.equal(r.stdout.match(GENERATED_KEY), null);
    });

    it('reports a taken port or an unreachable database in one line, exiting 1', async () => {
      const blocker = net.createServer();
      await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
      const taken = (blocker.address() as net.AddressInfo).port;
      try {
        const r = await run(['serve'], { PORT: String(taken) });
        assert.equal(r.code, 1, r.stderr);
        assert.match(r.stderr, /rowhouse: .*EADDRINUSE/);
        assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
      } finally {
        blocker.close();
      }
      const down = await run(['migrate'], { DATABASE_URL: `postgres://rowhouse@127.0.0.1:${await freePort()}/none` });
      assert.equal(down.code, 1, down.stderr);
      assert.match(down.stderr, /rowhouse: .*ECONNREFUSED/);
      assert.doesNotMatch(down.stderr, /\n\s+at /, 'no stack trace');
    });

    it('listens where PORT and HOST say, keeps data in ROWHOUSE_DATA_DIR and makes ROWHOUSE_API_KEY exist', async () => {
      const port = await freePort('127.0.0.2');
      const dataDir = path.join(tempDir(), 'custom', 'state');
      const key = 'automation-key-0123456789';
      const s = await serve([], { PORT: String(port), HOST: '127.0.0.2', ROWHOUSE_DATA_DIR: dataDir, ROWHOUSE_API_KEY: key });
      try {
        assert.deepEqual(await getJson(`http://127.0.0.2:${port}/healthz`), { status: 200, body: { status: 'ok' } });
        assert.ok(await refused('127.0.0.1', port), 'HOST was honoured: nothing on 127.0.0.1');
        assert.ok(s.output().includes(`http://127.0.0.2:${port}`));

        assert.ok(fs.existsSync(path.join(dataDir, 'rowhouse.db')));
        // The given key replaces the generated one, and is not echoed.
        assert.equal(s.output().match(GENERATED_KEY), null);
        assert.ok(!s.output().includes(key));
        assert.equal((await getJson(`http://127.0.0.2:${port}/api/flows`, key)).status, 200);
        assert.equal((await getJson(`http://127.0.0.2:${port}/api/flows`, 'automation-key-012345678X')).status, 401);
      } finally {
        assert.equal((await s.stop()).code, 0);
      }
    });

    it('lets --port, --host and --data-dir override the environment', async () => {
      const envPort = await freePort('127.0.0.2');
      const flagPort = await freePort();
      const cwd = tempDir();
      const s = await serve(
        ['--port', String(flagPort), '--host', '127.0.0.1', '--data-dir', 'flag-data'],
        { PORT: String(envPort), HOST: '127.0.0.2', ROWHOUSE_DATA_DIR: 'env-data' },
        cwd,
      );
      try {
        assert.deepEqual(await getJson(`http://127.0.0.1:${flagPort}/healthz`), { status: 200, body: { status: 'ok' } });
        assert.ok(await refused('127.0.0.2', envPort));
        assert.ok(fs.existsSync(path.join(cwd, 'flag-data', 'rowhouse.db')));
        assert.ok(!fs.existsSync(path.join(cwd, 'env-data')));
      } finally {
        assert.equal((await s.stop()).code, 0);
      }
    });

    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      it(`on ${signal} stops accepting, finishes the request in flight and exits 0`, async () => {
        const key = 'shutdown-key-0123456789';
        const port = await freePort();
        const s = await serve([], { PORT: String(port), ROWHOUSE_API_KEY: key });

        // A request the server has begun (it answered 100 Continue) whose body is still to come.
        const body = JSON.stringify({ name: 'in flight', description: 'x'.repeat(2000) });
        const reply = new Promise<{ status: number; body: any }>((resolve, reject) => {
          const req = http.request(
            {
              host: '127.0.0.1', port, method: 'POST', path: '/api/flows',
              headers: {
                'x-api-key': key, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body),
                expect: '100-continue',
              },
            },
            (res) => {
              let text = '';
              res.on('data', (d) => (text += d));
              res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
            },
          );
          req.on('error', reject);
          req.on('continue', async () => {
            try {
              void s.stop(signal);
              // Wait until the listener is gone: new connections are refused.
              const deadline = Date.now() + 5000;
              while (!(await refused('127.0.0.1', port))) {
                if (Date.now() > deadline) throw new Error('the server still accepts connections after the signal');
                await new Promise((r) => setTimeout(r, 25));
              }
              assert.equal(s.child.exitCode, null, 'the process waits for the request in flight');
              await new Promise((r) => setTimeout(r, 100));
              req.end(body);
            } catch (err) {
              req.destroy();
              reject(err);
            }
          });
          req.flushHeaders();
        });

        const answered = await reply;
        assert.equal(answered.status, 201);
        assert.equal(answered.body.name, 'in flight');
        const exit = await s.exited;
        assert.equal(exit.signal, null);
        assert.equal(exit.code, 0, exit.stderr);
      });
    }

    it('serves from PostgreSQL through DATABASE_URL', { skip: !HAS_PG && 'no PostgreSQL' }, async () => {
      const scratch = await scratchDatabase('postgres');
      try {
        const port = await freePort();
        const s = await serve([], { PORT: String(port), DATABASE_URL: scratch.url, ROWHOUSE_DATA_DIR: scratch.dir });
        let key = '';
        try {
          assert.match(s.output(), /database: postgres/);
          key = theKey(s.output());
          assert.equal((await getJson(`http://127.0.0.1:${port}/api/flows`, key)).status, 200);
          assert.equal((await getJson(`http://127.0.0.1:${port}/readyz`)).status, 200);
        } finally {
          assert.equal((await s.stop()).code, 0);
        }
        assert.ok(!fs.existsSync(path.join(scratch.dir, 'rowhouse.db')), 'no SQLite file beside PostgreSQL');
        // The key is in PostgreSQL: a second start would find it (the restart itself is tested on SQLite).
        const client = new pg.Client({ connectionString: scratch.url });
        await client.connect();
        try {
          const { rows } = await client.query('select "keyHash" from rh_api_keys');
          assert.deepEqual(rows, [{ keyHash: hashApiKey(key) }]);
        } finally {
          await client.end();
        }
      } finally {
        await scratch.drop();
      }
    });
  });

  describe('rowhouse migrate', () => {
    it('creates the schema on SQLite and is idempotent', async () => {
      const cwd = tempDir();
      const first = await run(['migrate'], {}, cwd);
      assert.equal(first.code, 0, first.stderr);
      assert.match(first.stdout, /Applied migrations 1/);
      const file = path.join(cwd, 'data', 'rowhouse.db');
      const second = await run(['migrate'], {}, cwd);
      assert.equal(second.code, 0, second.stderr);
      assert.match(second.stdout, /No pending migrations/);

      const db = new SqliteDatabase(file, { readonly: true });
      try {
        const versions = db.prepare('select version from rh_migrations order by version').all() as { version: number }[];
        assert.deepEqual(versions.map((v) => v.version), MIGRATION_VERSIONS);
        const tables = (db.prepare("select name from sqlite_master where type = 'table'").all() as { name: string }[]).map((t) => t.name);
        for (const t of ['rh_settings', 'rh_members', 'rh_api_keys', 'rh_flows', 'rh_tables', 'rh_fields']) assert.ok(tables.includes(t), t);
        // migrate makes no key and no member: that is serve's first start.
        assert.equal((db.prepare('select count(*) as n from rh_api_keys').get() as { n: number }).n, 0);
      } finally {
        db.close();
      }
    });

    it('runs against PostgreSQL and a second run applies nothing', { skip: !HAS_PG && 'no PostgreSQL' }, async () => {
      const scratch = await scratchDatabase('postgres');
      try {
        const env = { DATABASE_URL: scratch.url };
        const first = await run(['migrate'], env, scratch.dir);
        assert.equal(first.code, 0, first.stderr);
        assert.match(first.stdout, /Applied migrations 1/);
        const second = await run(['migrate'], env, scratch.dir);
        assert.equal(second.code, 0, second.stderr);
        assert.match(second.stdout, /No pending migrations/);

        const client = new pg.Client({ connectionString: scratch.url });
        await client.connect();
        try {
          const { rows } = await client.query('select version from rh_migrations order by version');
          assert.deepEqual(rows.map((r) => r.version), MIGRATION_VERSIONS);
          const tables = await client.query("select table_name from information_schema.tables where table_schema = 'public'");
          const names = tables.rows.map((r) => r.table_name);
          for (const t of ['rh_settings', 'rh_members', 'rh_api_keys', 'rh_flows', 'rh_tables', 'rh_fields']) assert.ok(names.includes(t), t);
        } finally {
          await client.end();
        }
        assert.ok(!fs.existsSync(path.join(scratch.dir, 'data')), 'no SQLite database was made');
      } finally {
        await scratch.drop();
      }
    });
  });

  describe('rowhouse api-keys', () => {
    it('create prints a working key once, list never shows it, revoke makes it 401 on the next request', async () => {
      const cwd = tempDir();
      const created = await run(['api-keys', 'create', '--name', 'Robot'], {}, cwd);
      assert.equal(created.code, 0, created.stderr);
      const key = theKey(created.stdout);
      const id = /Created API key ([0-9a-f-]{36})/.exec(created.stdout)?.[1];
      assert.ok(id, created.stdout);

      // The database already has a key, so the first serve makes none.
      const port = await freePort();
      const s = await serve([], { PORT: String(port) }, cwd);
      try {
        assert.equal(s.output().match(GENERATED_KEY), null);
        const base = `http://127.0.0.1:${port}`;
        assert.equal((await getJson(`${base}/api/flows`, key)).status, 200);

        const listed = await run(['api-keys', 'list'], {}, cwd);
        assert.equal(listed.code, 0, listed.stderr);
        assert.ok(listed.stdout.includes(id));
        assert.ok(listed.stdout.includes('Robot'));
        assert.ok(!listed.stdout.includes(key), 'list printed the key');
        assert.ok(!listed.stdout.includes(hashApiKey(key)), 'list printed the hash');
        assert.equal(listed.stdout.match(GENERATED_KEY), null);

        const revoked = await run(['api-keys', 'revoke', id], {}, cwd);
        assert.equal(revoked.code, 0, revoked.stderr);
        const after = await getJson(`${base}/api/flows`, key);
        assert.equal(after.status, 401);
        assert.deepEqual(Object.keys(after.body).sort(), ['error', 'message', 'statusCode']);

        // Revoking again, or an unknown id, is an error.
        const again = await run(['api-keys', 'revoke', id], {}, cwd);
        assert.notEqual(again.code, 0);
        assert.match(again.stderr, new RegExp(id));
      } finally {
        assert.equal((await s.stop()).code, 0);
      }
    });

    it('works on PostgreSQL, storing only the hash', { skip: !HAS_PG && 'no PostgreSQL' }, async () => {
      const scratch = await scratchDatabase('postgres');
      try {
        const env = { DATABASE_URL: scratch.url };
        const created = await run(['api-keys', 'create', '--name', 'PgRobot'], env, scratch.dir);
        assert.equal(created.code, 0, created.stderr);
        const key = theKey(created.stdout);

        const client = new pg.Client({ connectionString: scratch.url });
        await client.connect();
        try {
          const { rows } = await client.query('select * from rh_api_keys');
          assert.equal(rows.length, 1);
          assert.equal(rows[0].keyHash, hashApiKey(key));
          assert.ok(!JSON.stringify(rows).includes(key));
          const id = rows[0].id as string;
          const revoked = await run(['api-keys', 'revoke', id], env, scratch.dir);
          assert.equal(revoked.code, 0, revoked.stderr);
          const after = await client.query('select "revokedAt" from rh_api_keys where id = $1', [id]);
          assert.notEqual(after.rows[0].revokedAt, null);
        } finally {
          await client.end();
        }
      } finally {
        await scratch.drop();
      }
    });

    it('create without --name is a usage error', async () => {
      const r = await run(['api-keys', 'create']);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /--name/);
      assert.match(r.stderr, /Usage: rowhouse/);
    });
  });

  describe('rowhouse usage', () => {
    for (const args of [['frobnicate'], ['api-keys', 'frob'], ['serve', '--no-such-flag']]) {
      it(`\`rowhouse ${args.join(' ')}\` prints the usage and exits non-zero`, async () => {
        const r = await run(args);
        assert.notEqual(r.code, 0);
        assert.equal(r.signal, null);
        assert.match(r.stderr, /Usage: rowhouse <command>/);
        assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
      });
    }

    it('`rowhouse --help` prints the usage and exits 0', async () => {
      const r = await run(['--help']);
      assert.equal(r.code, 0);
      assert.match(r.stdout, /api-keys create --name NAME/);
    });
  });
});
