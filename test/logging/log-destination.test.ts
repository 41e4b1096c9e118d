import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { BufferedLog, FLUSH_MS, MIN_BYTES } from '../../src/http/log-destination.ts';
import { childEnv } from '../support/served.ts';
import { freePort, within } from '../support/wire.ts';

/**
 * The log's destination as a process writes it (issue 27, src/http/log-destination.ts): lines wait
 * in a buffer, and go out after FLUSH_MS, at MIN_BYTES, at once for warn and above, and at the
 * process's exit (a shutdown on SIGTERM, process.exit, a fatal uncaught exception).
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = path.join(ROOT, 'bin/rowhouse.mjs');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const dirs: string[] = [];
after(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});
function scratch(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-log-'));
  dirs.push(dir);
  return dir;
}

/** A pino logger at info over a BufferedLog on a file, and the file's lines so far. */
function fileLogger(): { log: pino.Logger; lines: () => Record<string, unknown>[]; close: () => void } {
  const file = path.join(scratch(), 'log');
  const fd = fs.openSync(file, 'w');
  const log = pino({ level: 'info' }, new BufferedLog(fd));
  return {
    log,
    lines: () => fs.readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l)),
    close: () => fs.closeSync(fd),
  };
}

describe('the buffered log', () => {
  it('holds info lines back, then writes them out within FLUSH_MS', async () => {
    const { log, lines, close } = fileLogger();
    try {
      log.info({ n: 1 }, 'first');
      log.info({ n: 2 }, 'second');
      assert.deepEqual(lines(), [], 'nothing written yet');
      await sleep(FLUSH_MS * 3);
      assert.deepEqual(lines().map((l) => [l.msg, l.n, l.level]), [['first', 1, 30], ['second', 2, 30]]);
    } finally {
      close();
    }
  });

  it('writes a line at warn or above at once, with the lines waiting before it', () => {
    const { log, lines, close } = fileLogger();
    try {
      log.info('waiting');
      log.warn('a problem');
      assert.deepEqual(lines().map((l) => l.msg), ['waiting', 'a problem']);
      log.error('a fault');
      assert.deepEqual(lines().map((l) => l.msg), ['waiting', 'a problem', 'a fault']);
    } finally {
      close();
    }
  });

  it('writes the lines out at once when MIN_BYTES of them are waiting', () => {
    const { log, lines, close } = fileLogger();
    try {
      const filler = 'x'.repeat(200);
      let n = 0;
      while (lines().length === 0) {
        log.info({ filler, n: n++ }, 'line');
        assert.ok(n * filler.length <= MIN_BYTES + filler.length, `${n} lines written and still nothing out`);
      }
      assert.deepEqual(lines().map((l) => l.n), Array.from({ length: n }, (_, k) => k));
    } finally {
      close();
    }
  });
});

/** A node process over src/ that logs three info lines to standard output, then ends as `end` says; its output. */
async function logThenEnd(end: string): Promise<{ stdout: string; stderr: string; code: number | null }> {
  const module = path.join(ROOT, 'src/http/log-destination.ts');
  const script = `
    import pino from 'pino';
    import { standardOutputLog } from ${JSON.stringify(module)};
    const log = pino({ level: 'info' }, standardOutputLog());
    for (const n of [1, 2, 3]) log.info({ n }, 'line');
    ${end}
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const code = await within(30_000, 'the child process', new Promise<number | null>((resolve) => child.on('close', resolve)));
  return { stdout, stderr, code };
}

const numbered = (stdout: string) => stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l).n);

describe('the log of a process', () => {
  it('is written out at process.exit', async () => {
    const { stdout, code } = await logThenEnd('process.exit(0);');
    assert.equal(code, 0);
    assert.deepEqual(numbered(stdout), [1, 2, 3]);
  });

  it('is written out when an uncaught exception ends the process', async () => {
    const { stdout, stderr, code } = await logThenEnd(`setImmediate(() => { throw new Error('boom'); });`);
    assert.equal(code, 1);
    assert.match(stderr, /boom/);
    assert.deepEqual(numbered(stdout), [1, 2, 3]);
  });

  it("is written out when the process ends by itself, the lines' time not yet up", async () => {
    const { stdout, code } = await logThenEnd('');
    assert.equal(code, 0);
    assert.deepEqual(numbered(stdout), [1, 2, 3]);
  });

  it('`rowhouse serve` stopped by SIGTERM: an access line for every request answered', { timeout: 120_000 }, async () => {
    const dir = scratch();
    const port = await freePort();
    const key = 'log-destination-test-key-0123456789';
    const child = spawn(process.execPath, [BIN, 'serve'], {
      cwd: dir,
      env: childEnv({ ROWHOUSE_API_KEY: key, PORT: String(port), ROWHOUSE_DATA_DIR: dir, ROWHOUSE_LOG_LEVEL: 'info' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
    try {
      await within(60_000, 'serve listening', (async () => {
        while (!stdout.includes('Rowhouse is listening on')) await sleep(50);
      })());
      const ids: string[] = [];
      for (let n = 0; n < 40; n++) {
        const res = await fetch(`http://127.0.0.1:${port}/api/tables`, { headers: { 'x-api-key': key, 'x-request-id': `log-test-${n}` } });
        await res.text();
        assert.equal(res.status, 200);
        ids.push(`log-test-${n}`);
      }
      child.kill('SIGTERM');
      assert.equal(await within(30_000, 'serve exiting', closed), 0);
      const logged = stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).filter((l) => l.msg === 'request').map((l) => l.reqId);
      assert.deepEqual(logged, ids);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
