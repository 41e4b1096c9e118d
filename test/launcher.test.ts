import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

// bin/rowhouse.mjs runs dist/ only while it is current, and src/ through tsx otherwise, on a copy of
// the launcher in a scratch project whose cli modules say which of the two ran.
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const scratch: string[] = [];
after(() => {
  for (const dir of scratch) fs.rmSync(dir, { recursive: true, force: true });
});

function project(files: Record<string, string>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-launcher-'));
  scratch.push(root);
  fs.mkdirSync(path.join(root, 'bin'));
  fs.copyFileSync(path.join(ROOT, 'bin/rowhouse.mjs'), path.join(root, 'bin/rowhouse.mjs'));
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(root, 'node_modules'));
  fs.writeFileSync(path.join(root, 'package.json'), '{"type":"module"}');
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), text);
  }
  return root;
}

const SRC_CLI = "export async function main(argv: string[]): Promise<void> { console.log('ran src', argv.join(' ')); }\n";
// As the build emits it: one CommonJS file, under a package.json saying so.
const DIST_CLI = "exports.main = async function main(argv) { console.log('ran dist', argv.join(' ')); };\n";
const DIST_TYPE = '{"type":"commonjs"}';

/** Sets a file's modification time, seconds from now. */
function touch(root: string, file: string, secondsFromNow: number): void {
  const t = Date.now() / 1000 + secondsFromNow;
  fs.utimesSync(path.join(root, file), t, t);
}

function launch(root: string) {
  const r = spawnSync(process.execPath, [path.join(root, 'bin/rowhouse.mjs'), 'serve', '--port', '1'], { cwd: root, encoding: 'utf8', env: { PATH: process.env.PATH } });
  assert.equal(r.status, 0, r.stderr);
  return { stdout: r.stdout, stderr: r.stderr };
}

describe('bin/rowhouse.mjs', () => {
  it('runs dist/ when the bundle is at least as new as every src/ file, and says nothing', () => {
    const root = project({ 'src/cli.ts': SRC_CLI, 'src/store/db.ts': '', 'dist/cli.js': DIST_CLI, 'dist/package.json': DIST_TYPE });
    touch(root, 'src/cli.ts', -60);
    touch(root, 'src/store/db.ts', -60);
    const r = launch(root);
    assert.equal(r.stdout, 'ran dist serve --port 1\n');
    assert.equal(r.stderr, '');
  });

  it('runs src/ through tsx, with a one-line notice naming the file, when a src/ file is newer than the bundle', () => {
    const root = project({ 'src/cli.ts': SRC_CLI, 'src/store/db.ts': '', 'dist/cli.js': DIST_CLI, 'dist/package.json': DIST_TYPE });
    touch(root, 'src/cli.ts', -60);
    touch(root, 'src/store/db.ts', 60);
    const r = launch(root);
    assert.equal(r.stdout, 'ran src serve --port 1\n');
    assert.match(r.stderr, /^rowhouse: dist\/ is older than src\/store\/db\.ts; running src\/ through tsx \(npm run build for the compiled start\)\n$/);
  });

  it('runs src/ when dist/ holds no complete build (a build that stopped before writing the CommonJS marker)', () => {
    const root = project({ 'src/cli.ts': SRC_CLI, 'dist/cli.js': DIST_CLI });
    touch(root, 'src/cli.ts', -60);
    const r = launch(root);
    assert.equal(r.stdout, 'ran src serve --port 1\n');
    assert.match(r.stderr, /^rowhouse: dist\/ is not built; running src\/ through tsx/);
  });

  it('runs src/ when dist/ was never built', () => {
    const r = launch(project({ 'src/cli.ts': SRC_CLI }));
    assert.equal(r.stdout, 'ran src serve --port 1\n');
    assert.match(r.stderr, /^rowhouse: dist\/ is not built; running src\/ through tsx/);
    assert.equal(r.stderr.split('\n').length, 2, 'one line');
  });
});
