import type pg from 'pg';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
// @ts-expect-error: a plain JavaScript module of the test setup, without type declarations
import { startPostgres } from '../../test/support/postgres-server.mjs';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BENCH_KEY = 'rh_benchkey_0123456789abcdefghijklmnopqrst';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export interface Proc {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Waits until `url` answers 2xx (`child` still running), at most `timeoutMs`. */
export async function waitFor(url: string, child: ChildProcess, log: () => string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`process exited while starting:\n${log()}`);
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`not ready after ${timeoutMs / 1000} s:\n${log()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Starts a node process and waits until `health` answers 200. */
export async function startProcess(args: string[], env: Record<string, string>, port: number, health: string, cwd = ROOT): Promise<Proc> {
  const child = spawn(process.execPath, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (d: Buffer) => {
    out = (out + d).slice(-20_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const url = `http://127.0.0.1:${port}`;
  await waitFor(url + health, child, () => out);
  return {
    url,
    child,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** PROFILE_SERVICE=DIR: node's arguments that write a CPU profile of the process started there. */
function profiled(): string[] {
  return process.env.PROFILE_SERVICE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.PROFILE_SERVICE}`] : [];
}

/**
 * Refuses to measure src/ run through tsx rather than the build: the launcher names tsx on stderr
 * when it would (dist/ missing or older than src/). Asked once, with --help, which makes the same
 * check; startService keeps the service's own stderr to itself.
 */
const buildChecked = new Set<string>();
function requireBuild(root: string): void {
  if (buildChecked.has(root)) return;
  const note = spawnSync(process.execPath, ['bin/rowhouse.mjs', '--help'], { cwd: root, encoding: 'utf8' }).stderr.trim();
  if (/tsx/.test(note)) throw new Error(`the service in ${root} would run src/ through tsx, not the build: ${note}\nrun \`npm run build\` there first`);
  buildChecked.add(root);
}

/**
 * The service as a user runs it: `rowhouse serve`, from the build (dist/), on a port of its own, at
 * its default log level (info: an access-log line per request, read from its stdout here as a log
 * collector would) unless `env` sets ROWHOUSE_LOG_LEVEL. `root`: the checkout whose build it runs
 * (another's, to compare two builds side by side); `nodeArgs`: node's own, before the script.
 */
export async function startService(env: Record<string, string>, root = ROOT, nodeArgs: string[] = []): Promise<Proc> {
  requireBuild(root);
  const port = await freePort();
  return startProcess([...profiled(), ...nodeArgs, 'bin/rowhouse.mjs', 'serve'], { PORT: String(port), ROWHOUSE_API_KEY: BENCH_KEY, ...env }, port, '/healthz', root);
}

/** Peak resident memory of a process so far, from /proc (VmHWM), in MiB. */
export async function peakRssMiB(pid: number): Promise<number> {
  const fs = await import('node:fs/promises');
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8');
  const m = /VmHWM:\s+(\d+) kB/.exec(status);
  return m ? Number(m[1]) / 1024 : NaN;
}

/** The raw-SQL floor on the same tables: bench/floor-server.ts on a SQLite file, floor-server-pg.ts on a postgres:// URL (`link`: its FLOOR_LINK). */
export async function startFloor(db: string, tables: { physical: string; columns: Record<string, string> }[], link?: { edges: string; mine: string; other: string; target: number; column: string }): Promise<Proc> {
  const port = await freePort();
  const script = db.startsWith('postgres') ? 'bench/floor-server-pg.ts' : 'bench/floor-server.ts';
  return startProcess(
    [...profiled(), '--import', 'tsx', script],
    { PORT: String(port), FLOOR_DB: db, FLOOR_TABLES: JSON.stringify(tables), ...(link ? { FLOOR_LINK: JSON.stringify(link) } : {}) },
    port,
    '/healthz',
  );
}

/**
 * VmRSS and VmHWM of a process, in MiB, and VmRSS in two parts: RssAnon (heap and every other
 * memory of its own) and RssFile (pages of files it maps, such as the database file SQLite's
 * request reader maps, which are the OS's file cache, shared and dropped when memory is short).
 */
export function memory(pid: number): { rss: number; hwm: number; anon: number; file: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1]) / 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM'), anon: kb('RssAnon'), file: kb('RssFile') };
}

/**
 * User and system CPU time of a process so far, all threads, in ms (clock ticks of 10 ms): unlike
 * wall time, other load barely moves it. With `thread`, that thread's alone (`thread = pid`: the
 * main thread).
 */
export function cpuMs(pid: number, thread?: number): { user: number; system: number; total: number } {
  const fields = fs.readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'utf8').split(') ')[1].split(' ');
  const user = Number(fields[11]) * 10;
  const system = Number(fields[12]) * 10;
  return { user, system, total: user + system };
}

/**
 * What a process has waited for the disk for so far: its major page faults (a mapped page the OS
 * had to read from the disk) and the bytes its reads took from the disk rather than the OS's file
 * cache (/proc/PID/io read_bytes; a pread served from the cache counts only in rchar). Beside them,
 * the bytes it read with read(2) and pread(2) from anywhere (rchar: the OS's cache, the disk,
 * sockets) and its minor faults (a page mapped in without the disk: a mapped file page the OS had,
 * or new heap), which cost the kernel, and a virtual machine more, without a disk.
 */
export function diskReads(pid: number): { majorFaults: number; diskBytes: number; readBytes: number; minorFaults: number } {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  const io = fs.readFileSync(`/proc/${pid}/io`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(io)?.[1]);
  return { majorFaults: Number(fields[9]), diskBytes: field('read_bytes'), readBytes: field('rchar'), minorFaults: Number(fields[7]) };
}

const postmasters = new WeakMap<pg.Client, number>();

/**
 * PostgreSQL: the CPU time (ms) the database server has used so far, all its processes: the
 * postmaster's, its children's alive now (connections, the WAL writer, the checkpointer,
 * autovacuum), and those of its children that ended (counted into the postmaster's when it reaped
 * them: a pool that ends idle connections takes nothing away). The server must run on this machine.
 */
export async function databaseCpuMs(client: pg.Client): Promise<number> {
  let postmaster = postmasters.get(client);
  if (postmaster === undefined) {
    const { rows: [{ dir }] } = await client.query<{ dir: string }>('select current_setting($1) as dir', ['data_directory']);
    postmaster = Number(fs.readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    postmasters.set(client, postmaster);
  }
  const stat = (pid: string | number) => fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  const own = stat(postmaster);
  // utime, stime, and the reaped children's cutime, cstime (clock ticks of 10 ms).
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const f = stat(pid);
      if (Number(f[1]) === postmaster) ticks += Number(f[11]) + Number(f[12]);
    } catch {
      // ended meanwhile: counted into the postmaster's once reaped
    }
  }
  return ticks * 10;
}

/** Samples the VmRSS of `pid` every `everyMs` while `work` runs: its peak (from `start` on), the sample count, the longest gap between samples. */
export async function sampled<T>(pid: number, work: () => Promise<T>, everyMs: number, start = memory(pid).rss): Promise<{ result: T; peak: number; samples: number; maxGapMs: number }> {
  let peak = start;
  let samples = 1;
  let last = performance.now();
  let maxGapMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    maxGapMs = Math.max(maxGapMs, now - last);
    last = now;
    peak = Math.max(peak, memory(pid).rss);
    samples++;
  }, everyMs);
  try {
    const result = await work();
    peak = Math.max(peak, memory(pid).rss);
    return { result, peak, samples: samples + 1, maxGapMs };
  } finally {
    clearInterval(timer);
  }
}

/**
 * A bench's database: a temporary data folder, and with BENCH_DATABASE=postgres a PostgreSQL
 * server started for the bench (the machine's binaries, as the tests use). `env` points a service
 * at both; `db` is what a floor opens (the SQLite file, or the server's URL).
 */
export async function benchDatabase(name: string): Promise<{ dir: string; postgres: { url: string; stop(): Promise<void> } | null; env: Record<string, string>; db: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `rowhouse-${name}-`));
  const postgres = process.env.BENCH_DATABASE === 'postgres' ? await startPostgres() : null;
  if (process.env.BENCH_DATABASE === 'postgres' && !postgres) throw new Error('no PostgreSQL binaries found');
  const env: Record<string, string> = { ROWHOUSE_DATA_DIR: dir, ...(postgres ? { DATABASE_URL: postgres.url } : {}) };
  return { dir, postgres, env, db: postgres ? postgres.url : path.join(dir, 'rowhouse.db') };
}
