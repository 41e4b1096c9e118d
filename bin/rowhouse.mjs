#!/usr/bin/env node
// Launcher: runs the compiled JavaScript in dist/ (built by `npm run build`, and by `npm ci`
// through the prepare script; see tsconfig.build.json), which answers its first request in about a
// third of the time, and idles in a little over half the memory, of compiling the TypeScript at
// run time (bench/startup.ts).
//
// When dist/ is missing or older than src/ (a source file edited, or pulled, since the last build),
// running dist/ would silently run old code, and rebuilding on every start would cost more than
// the start itself (a full tsc build takes about 5 s). So the launcher runs src/ through tsx instead,
// and says so on one stderr line. The check compares each src/ file with its dist/ counterpart: two
// stat calls a file, a few milliseconds in all.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const src = path.join(root, 'src');
const dist = path.join(root, 'dist');

/** Why dist/ is not the current build of src/, or null when it is (or when there is no src/ beside it). */
function staleBuild() {
  let entries;
  try {
    entries = fs.readdirSync(src, { recursive: true, withFileTypes: true });
  } catch {
    return null; // No sources beside the launcher: dist/ is all there is.
  }
  // `npm run build` writes dist/package.json (the CommonJS marker) once tsc has succeeded.
  if (!fs.existsSync(path.join(dist, 'package.json'))) return 'dist/ is not built';
  for (const e of entries) {
    if (!e.isFile() || !e.name.endsWith('.ts') || e.name.endsWith('.d.ts')) continue;
    const file = path.join(e.parentPath ?? e.path, e.name);
    const out = path.join(dist, path.relative(src, file)).replace(/\.ts$/, '.js');
    const built = fs.statSync(out, { throwIfNoEntry: false });
    if (!built || built.mtimeMs < fs.statSync(file).mtimeMs) return `dist/ is older than ${path.relative(root, file)}`;
  }
  return null;
}

const stale = staleBuild();
let main;
if (stale) {
  console.error(`rowhouse: ${stale}; running src/ through tsx (npm run build for the compiled start)`);
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../src/cli.ts'));
} else {
  ({ main } = await import('../dist/cli.js'));
}
await main(process.argv.slice(2));
