#!/usr/bin/env node
// Launcher: runs the build in dist/ (src/ bundled into one file by `npm run build`, and by `npm ci`
// through the prepare script; see scripts/build.mjs), which answers its first request in about a
// fifth of the time, and idles in a little over half the memory, of compiling the TypeScript at run
// time (bench/startup.ts).
//
// When dist/ is missing or older than src/ (a source file edited, or pulled, since the last build),
// running dist/ would silently run old code. So the launcher runs src/ through tsx instead, and says
// so on one stderr line. The check compares each src/ file with the bundle: one stat call a file,
// a few milliseconds in all.
import fs from 'node:fs';
import { createRequire } from 'node:module';
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
  // `npm run build` writes dist/package.json (the CommonJS marker) once the bundle is complete.
  if (!fs.existsSync(path.join(dist, 'package.json'))) return 'dist/ is not built';
  const built = fs.statSync(path.join(dist, 'cli.js'), { throwIfNoEntry: false });
  if (!built) return 'dist/ is not built';
  for (const e of entries) {
    if (!e.isFile() || !e.name.endsWith('.ts') || e.name.endsWith('.d.ts')) continue;
    const file = path.join(e.parentPath ?? e.path, e.name);
    if (built.mtimeMs < fs.statSync(file).mtimeMs) return `dist/ is older than ${path.relative(root, file)}`;
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
  // require, not import: the ES module loader would first scan the whole bundle for its exports.
  ({ main } = createRequire(import.meta.url)('../dist/cli.js'));
}
await main(process.argv.slice(2));
