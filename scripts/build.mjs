// The build `npm start` runs (`npm run build`, and `npm ci` through prepare): src/ bundled by
// esbuild into one CommonJS file, dist/cli.js, beside a dist/package.json that marks it CommonJS and
// is written last, so the launcher (bin/rowhouse.mjs) can tell a finished build from a broken one.
//
// One file, because Node 20 pays for every module it loads (resolution, a read, a wrapper, a
// compile): the service is about 900 modules, and loaded file by file (tsc's output) it answered
// its first request 1.7 times later than the floor; bundled, 1.1 times (bench/startup.ts).
// Left outside the bundle: better-sqlite3 (a native addon), pg-native (pg's optional native
// binding, not installed), the AWS SDK, loaded only when files are stored on S3, and swagger-ui-dist,
// whose getAbsoluteFSPath() is its own __dirname: bundled, it would name dist/, not the package.
//
// The build does not type-check (esbuild strips types): `npm test` runs tsc first. It rejects what
// would break in CommonJS: import.meta (but import.meta.dirname, defined as __dirname) and top-level
// await in src/. Then the browser console is built into dist/console/ (scripts/build-console.mjs).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { serviceBundleOptions } from './bundle-options.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
fs.rmSync(dist, { recursive: true, force: true });
await build(serviceBundleOptions(root, path.join(dist, 'cli.js')));
// The browser console, beside the service's bundle (scripts/build-console.mjs). A copy of the
// service alone (src/ and this script, as test/support/served.ts makes one) has no console to build.
if (fs.existsSync(path.join(root, 'console'))) await (await import('./build-console.mjs')).buildConsole();
else console.warn('build: no console/ beside src/: the browser console is not built');
fs.writeFileSync(path.join(dist, 'package.json'), JSON.stringify({ type: 'commonjs' }));
