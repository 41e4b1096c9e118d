// Starts PgBouncer (Debian's `pgbouncer` package) in front of a PostgreSQL server, in transaction
// mode with a small pool, so consecutive transactions of one client really run on different server
// connections (and one server connection serves many clients). PgBouncer refuses to run as root,
// so as root it drops to the `postgres` user (its -u flag), as the PostgreSQL of the suite does.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './postgres-server.mjs';

/** The pgbouncer binary, or null when the package is not installed. */
export function findPgbouncer() {
  for (const dir of ['/usr/sbin', '/usr/bin', '/usr/local/bin', ...(process.env.PATH ?? '').split(':')]) {
    const p = path.join(dir, 'pgbouncer');
    if (dir && fs.existsSync(p)) return p;
  }
  return null;
}

function accepting(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * PgBouncer in front of the server `serverUrl` names (any database on it, the URL's user, trusted).
 * `url(directUrl)` is a URL of that server's (a scratch database's) rewritten to go through it.
 * @param {string} serverUrl
 * @param {{poolSize?: number, poolMode?: string}} [options]
 * @returns {Promise<{port: number, url: (directUrl: string) => string, log: () => string, stop: () => Promise<void>}>}
 */
export async function startPgbouncer(serverUrl, options = {}) {
  const bin = findPgbouncer();
  if (!bin) throw new Error('pgbouncer is not installed (apt-get install pgbouncer)');
  const server = new URL(serverUrl);
  const user = decodeURIComponent(server.username || 'postgres');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-pgbouncer-'));
  fs.chmodSync(dir, 0o755);
  const port = await freePort();
  const ini = path.join(dir, 'pgbouncer.ini');
  const users = path.join(dir, 'users.txt');
  fs.writeFileSync(users, `"${user}" ""\n`, { mode: 0o644 });
  fs.writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=${server.hostname} port=${server.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${users}`,
      `pool_mode = ${options.poolMode ?? 'transaction'}`,
      `default_pool_size = ${options.poolSize ?? 2}`,
      'max_client_conn = 500',
      // A client waiting longer than this for a server connection fails, rather than hang a test.
      'query_wait_timeout = 30',
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  const args = process.getuid?.() === 0 ? ['-u', 'postgres', ini] : [ini];
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const keep = (d) => {
    log += d;
    if (log.length > 200_000) log = log.slice(-100_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const deadline = Date.now() + 15_000;
  while (!(await accepting(port))) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited while starting:\n${log}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`pgbouncer did not listen:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    port,
    url(directUrl) {
      const u = new URL(directUrl);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    log: () => log,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
