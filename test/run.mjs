// `npm test`: starts a real PostgreSQL server (unless DATABASE_URL names one), then runs every
// test file with node's test runner against SQLite and PostgreSQL. With CI=true a missing
// PostgreSQL is a failure, never a silent skip.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startPostgres } from './support/postgres-server.mjs';

const root = path.dirname(fileURLToPath(import.meta.url));

function testFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return testFiles(p);
    return e.name.endsWith('.test.ts') ? [p] : [];
  });
}

let pgUrl = process.env.DATABASE_URL?.startsWith('postgres') ? process.env.DATABASE_URL : undefined;
let server = null;
if (!pgUrl) {
  try {
    server = await startPostgres();
  } catch (err) {
    console.error(`Could not start PostgreSQL: ${err.message}`);
  }
  pgUrl = server?.url;
}
if (!pgUrl) {
  if (process.env.CI === 'true') {
    console.error('CI=true and no PostgreSQL server could be started or was given in DATABASE_URL: failing.');
    process.exit(1);
  }
  console.warn('WARNING: no PostgreSQL available; running the SQLite half of the suite only.');
}

const files = process.argv.slice(2).length > 0 ? process.argv.slice(2) : testFiles(root).sort();
const child = spawn(
  process.execPath,
  [
    '--import', 'tsx', '--test', '--test-concurrency=2',
    '--test-reporter=spec', '--test-reporter-destination=stdout',
    `--test-reporter=${path.join(root, 'support/file-times.mjs')}`, '--test-reporter-destination=stdout',
    ...files,
  ],
  { stdio: 'inherit', env: { ...process.env, ROWHOUSE_TEST_PG_URL: pgUrl ?? '', DATABASE_URL: '' } },
);
const code = await new Promise((resolve) => child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))));
await server?.stop();
process.exit(code);
