#!/usr/bin/env node
// Launcher: runs the compiled JavaScript in dist/ (built by `npm run build`, and by `npm ci`
// through the prepare script; see tsconfig.build.json), which answers its first request in about
// half the time, and idles in about 60% of the memory, of compiling the TypeScript at run time.
//
// When dist/ is missing or older than src/ (a source file edited, or pulled, since the last build),
// running dist/ would silently run old code, and rebuilding on every start would cost more than
// the start itself (a full tsc build takes seconds). So the launcher runs src/ through tsx instead,
// and says so on one stderr line. The check compares each src/ file with its dist/ counterpart: a
// handful of stat calls, about a millisecond.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const src = path.join(root, 'src');
const dist = path.join(root, 'dist');

/** The first src/ file whose dist/ output is missing or older than it ('' when dist/ is current); null without src/. */
function staleSource() {
  let entries;
  try {
    entries = fs.readdirSync(src, { recursive: true, withFileTypes: true });
  } catch {
    return null; // No sources beside the launcher: dist/ is all there is.
  }
  for (const e of entries) {
    if (!e.isFile() || !e.name.endsWith('.ts') || e.name.endsWith('.d.ts')) continue;
    const file = path.join(e.parentPath ?? e.path, e.name);
    const out = path.join(dist, path.relative(src, file)).replace(/\.ts$/, '.js');
    const built = fs.statSync(out, { throwIfNoEntry: false });
    if (!built || built.mtimeMs < fs.statSync(file).mtimeMs) return path.relative(root, file);
  }
  return '';
}

const stale = staleSource();
let main;
if (stale) {
  const why = fs.existsSync(path.join(dist, 'cli.js')) ? `dist/ is older than ${stale}` : 'dist/ is not built';
  console.error(`rowhouse: ${why}; running src/ through tsx (npm run build for the compiled start)`);
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../src/cli.ts'));
} else {
  ({ main } = await import('../dist/cli.js'));
}
await main(process.argv.slice(2));
