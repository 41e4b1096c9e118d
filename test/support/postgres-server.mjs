// Starts a throwaway PostgreSQL server in a temporary directory with the machine's binaries,
// for the test suite and the benchmarks. PostgreSQL refuses to run as root, so as root it runs
// as the `postgres` user.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

function findBinDir() {
  const root = '/usr/lib/postgresql';
  if (!fs.existsSync(root)) return null;
  const versions = fs.readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) {
    const dir = path.join(root, v, 'bin');
    if (fs.existsSync(path.join(dir, 'initdb')) && Number(v) >= 14) return dir;
  }
  return null;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const isRoot = process.getuid?.() === 0;

function asPostgres(cmd, args) {
  return isRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
}

/** @returns {Promise<{url: string, stop: () => Promise<void>} | null>} null when no binaries are found */
export async function startPostgres() {
  const bin = findBinDir();
  if (!bin) return null;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-pg-'));
  fs.chmodSync(dir, 0o755);
  const data = path.join(dir, 'data');
  fs.mkdirSync(data, { mode: 0o700 });
  if (isRoot) execFileSync('chown', ['-R', 'postgres:postgres', dir]);
  const [initCmd, initArgs] = asPostgres(path.join(bin, 'initdb'), [
    '-D', data, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C.UTF-8', '--no-sync',
    // A linguistic default collation (not byte order), as most servers have: the service must not depend on the server's.
    '--locale-provider=icu', '--icu-locale=en-US',
  ]);
  execFileSync(initCmd, initArgs, { stdio: 'pipe' });
  const port = await freePort();
  const [cmd, args] = asPostgres(path.join(bin, 'postgres'), [
    '-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1',
    '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=300',
  ]);
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr.on('data', (d) => {
    log += d;
    if (log.length > 100_000) log = log.slice(-50_000);
  });
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`PostgreSQL exited while starting:\n${log}`);
    try {
      execFileSync(path.join(bin, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres'], { stdio: 'ignore' });
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`PostgreSQL did not become ready:\n${log}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        // runuser does not pass signals on; pg_ctl stops the server itself.
        const [stopCmd, stopArgs] = asPostgres(path.join(bin, 'pg_ctl'), ['stop', '-D', data, '-m', 'immediate', '-w']);
        execFileSync(stopCmd, stopArgs, { stdio: 'ignore' });
        await exited;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
