import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type DbKind, type ScratchDatabase, scratchDatabase } from './harness.ts';
import { freePort } from './wire.ts';

/**
 * `rowhouse serve` in child processes, as an operator runs it: the project's own launcher
 * (bin/rowhouse.mjs) over a build of the current src/ (scripts/build.mjs), made once per test file
 * in a scratch copy of the project. Through tsx every start took 2-3 s instead of about half a
 * second, which tests that start many servers (test/reliability/crash.test.ts restarts one a
 * hundred times) cannot afford.
 *
 * Each test file runs in a process of its own, so what is started here is that file's: stopAll()
 * in its last `after` stops its servers and removes its scratch directories.
 *
 * childEnv() is also the environment of tests that run bin/rowhouse.mjs over src/ themselves
 * (test/cli.test.ts, test/shutdown.test.ts, test/changes/crash.test.ts).
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const scratchDirs: string[] = [];
/** Servers still running: a failed test leaves none behind (it would keep the test process alive). */
const running = new Set<ChildProcess>();

/** A new directory under the system's temp directory, removed by stopAll(). */
export function scratchDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  scratchDirs.push(dir);
  return dir;
}

/** A copy of the project with the build of the current sources, which the launcher runs; answers its directory. */
export function buildProject(prefix: string): string {
  const dir = scratchDir(prefix);
  fs.cpSync(path.join(ROOT, 'src'), path.join(dir, 'src'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'scripts'));
  for (const script of ['build.mjs', 'bundle-options.mjs']) fs.copyFileSync(path.join(ROOT, 'scripts', script), path.join(dir, 'scripts', script));
  fs.mkdirSync(path.join(dir, 'bin'));
  fs.copyFileSync(path.join(ROOT, 'bin/rowhouse.mjs'), path.join(dir, 'bin/rowhouse.mjs'));
  fs.writeFileSync(path.join(dir, 'package.json'), '{"type":"module"}');
  fs.symlinkSync(fs.realpathSync(path.join(ROOT, 'node_modules')), path.join(dir, 'node_modules'));
  const built = spawnSync(process.execPath, [path.join(dir, 'scripts/build.mjs')], { cwd: dir, encoding: 'utf8' });
  assert.equal(built.status, 0, `build failed:\n${built.stdout}\n${built.stderr}`);
  return dir;
}

export interface ChildEnvOptions {
  /**
   * Leave out the parent's AWS_* variables too: where a test configures S3 storage itself, a
   * developer's AWS_PROFILE, AWS_REGION or AWS_ENDPOINT_URL must not reach the SDK in the child.
   */
  withoutAws?: boolean;
}

/**
 * The parent's environment without any Rowhouse setting (nor the test runner's, nor a database,
 * port or host of its own), at log level warn, plus the given settings: a child sees only what
 * its test gives it.
 */
export function childEnv(extra: Record<string, string>, options: ChildEnvOptions = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('ROWHOUSE_') || k.startsWith('NODE_TEST') || (options.withoutAws && k.startsWith('AWS_')) || ['DATABASE_URL', 'PORT', 'HOST', 'NODE_OPTIONS'].includes(k)) continue;
    env[k] = v;
  }
  return { ...env, ROWHOUSE_LOG_LEVEL: 'warn', ...extra };
}

export interface Server {
  /** What the test calls it in its messages ('serve' unless given). */
  name: string;
  child: ChildProcess;
  base: string;
  stdout(): string;
  stderr(): string;
  closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface ServeOptions extends ChildEnvOptions {
  cwd: string;
  /** Settings on top of childEnv(), which serve() gives a free PORT and HOST 127.0.0.1. */
  env: Record<string, string>;
  name?: string;
}

/** Starts `rowhouse serve` of a buildProject() and waits until it listens (a start that hangs is killed after 60 s). */
export async function serve(project: string, options: ServeOptions): Promise<Server> {
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(project, 'bin/rowhouse.mjs'), 'serve'], {
    cwd: options.cwd,
    env: childEnv({ PORT: String(port), HOST: '127.0.0.1', ...options.env }, options),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.on('data', (d) => (stderr += d));
  running.add(child);
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }),
  );
  const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  try {
    await new Promise<void>((resolve, reject) => {
      const check = () => {
        if (stdout.includes('Rowhouse is listening on')) {
          child.stdout?.off('data', check);
          resolve();
        }
      };
      child.stdout?.on('data', check);
      const who = options.name === undefined ? '' : `${options.name}: `;
      closed.then((r) => reject(new Error(`${who}serve exited (${r.code ?? r.signal}) before listening:\n${stdout}\n${stderr}`)));
    });
  } finally {
    clearTimeout(killer);
  }
  return { name: options.name ?? 'serve', child, base: `http://127.0.0.1:${port}`, stdout: () => stdout, stderr: () => stderr, closed };
}

/**
 * The one line let through on stderr: on Node 20 the AWS SDK warns, once per process, at its first
 * client, that its releases from 2027 need Node 22 (AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED=true
 * silences it). It is the SDK's, not the service's, and an operator sees it too: left on, and let
 * through. (Only a server on S3 storage loads the SDK at all.)
 */
const SDK_NODE_WARNING = /^\(node:\d+\) Warning: NodeVersionSupportWarning: The AWS SDK for JavaScript \(v3\)\n[\s\S]*?\n\(Use `node --trace-warnings \.\.\.` to show where the warning was created\)\n/;

export interface ComplaintOptions {
  /**
   * Take a log line that is not JSON for one cut off by a SIGKILL, and pass over it: for a process
   * killed at a random moment. Otherwise such a line is reported.
   */
  allowCutLines?: boolean;
}

/**
 * What a process said that indicates a problem: anything on stderr (but the SDK's warning), and
 * log lines of level warn (40) or above.
 */
export function complaints(server: Server, options: ComplaintOptions = {}): string[] {
  const out: string[] = [];
  const stderr = server.stderr().replace(SDK_NODE_WARNING, '');
  if (stderr.trim() !== '') out.push(`stderr: ${stderr.slice(0, 1000)}`);
  for (const line of server.stdout().split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const entry = JSON.parse(line);
      if (typeof entry.level === 'number' && entry.level >= 40) out.push(`log: ${line.slice(0, 500)}`);
    } catch {
      if (!options.allowCutLines) out.push(`a log line that is not JSON: ${line.slice(0, 500)}`);
    }
  }
  return out;
}

/** One of several instances a test runs side by side: its name in messages, and how many of its complaints were reported already. */
export interface Instance extends Server {
  reported: number;
}

/** Starts an Instance of `project` with these settings, in a directory of its own (`rowhouse-<prefix>-<name>-…`). */
export async function serveInstance(project: string, prefix: string, name: string, settings: Record<string, string>): Promise<Instance> {
  const cwd = scratchDir(`rowhouse-${prefix}-${name.replace(/\W+/g, '-')}-`);
  const server = await serve(project, { name, cwd, env: { ROWHOUSE_DATA_DIR: cwd, ...settings }, withoutAws: true });
  return { ...server, reported: 0 };
}

/** Asserts that no instance said anything wrong since the last look (each complaint reported once). */
export function assertQuiet(...servers: Instance[]): void {
  const found: string[] = [];
  for (const s of servers) {
    const all = complaints(s);
    found.push(...all.slice(s.reported).map((c) => `${s.name}: ${c}`));
    s.reported = all.length;
  }
  assert.deepEqual(found, [], 'stderr output or log lines at warn or above');
}

/** Kills (SIGKILL) every server still running and waits until they are gone: before a test drops their database. */
export async function stopServers(): Promise<void> {
  await Promise.all([...running].map((child) => new Promise((resolve) => child.once('close', resolve).kill('SIGKILL'))));
}

/** The end of a test file: its servers stopped, its scratch directories (the build among them) removed. */
export async function stopAll(): Promise<void> {
  await stopServers();
  for (const dir of scratchDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
}

/**
 * For the tests of a describe that serve over one database: a scratch database of `kind`, made
 * before them; after them, the servers still running are stopped (a failed test leaves its own
 * behind) and then it is dropped. Its url and dir can be read once the tests run.
 */
export function servedDatabase(kind: DbKind): ScratchDatabase {
  let db: ScratchDatabase | undefined;
  before(async () => {
    db = await scratchDatabase(kind);
  });
  after(async () => {
    await stopServers();
    await db?.drop();
  });
  const made = (): ScratchDatabase => {
    if (!db) throw new Error('the scratch database is made in before()');
    return db;
  };
  return {
    get url() {
      return made().url;
    },
    get dir() {
      return made().dir;
    },
    drop: () => made().drop(),
  };
}
