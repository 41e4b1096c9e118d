// Fails (exit 1) when a module under src/ imports from a higher layer, type-only imports included.
// Layers, bottom to top (a module may import its own layer and the ones below):
//   0 domain (and config.ts, which imports nothing from src)
//   1 plan: plans as plain data, made from domain values; the store runs them
//   2 store
//   3 render, files, events, export, import, openapi
//   4 http
//   5 app.ts, server.ts, cli.ts
// Cycles are madge's to find (npm test runs both); this check is about direction.
// Usage: node scripts/check-layers.mjs [--list]   (--list also prints every import across folders)
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'src');

const LAYERS = {
  domain: 0,
  'config.ts': 0,
  plan: 1,
  store: 2,
  render: 3,
  files: 3,
  events: 3,
  export: 3,
  import: 3,
  openapi: 3,
  stream: 3,
  http: 4,
  'app.ts': 5,
  'server.ts': 5,
  'cli.ts': 5,
};


/** A module's part: its first folder under src, or its file name when it sits in src itself. */
function partOf(file) {
  return path.relative(root, file).split(path.sep)[0];
}

function sourceFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

const problems = [];
const crossings = new Map();
for (const file of sourceFiles(root)) {
  const from = partOf(file);
  if (!(from in LAYERS)) {
    problems.push(`${path.relative(root, file)}: src/${from} has no layer (add it to scripts/check-layers.mjs)`);
    continue;
  }
  // preProcessFile lists static, type-only, re-exported and dynamic imports alike.
  const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
  for (const { fileName } of importedFiles) {
    if (!fileName.startsWith('.')) continue;
    const target = path.resolve(path.dirname(file), fileName);
    if (!target.startsWith(root + path.sep)) continue; // package.json and the like: no layer of src
    const to = partOf(target);
    if (to === from) continue;
    const key = `${from} -> ${to}`;
    crossings.set(key, (crossings.get(key) ?? 0) + 1);
    if (!(to in LAYERS)) {
      problems.push(`${path.relative(root, file)} imports ${fileName}: src/${to} has no layer`);
    } else if (LAYERS[to] > LAYERS[from]) {
      problems.push(`${path.relative(root, file)} imports ${fileName}: ${from} (layer ${LAYERS[from]}) may not import ${to} (layer ${LAYERS[to]})`);
    }
  }
}

if (process.argv.includes('--list')) {
  for (const [key, count] of [...crossings].sort()) {
    const [from, to] = key.split(' -> ');
    const way = LAYERS[to] < LAYERS[from] ? 'down' : LAYERS[to] === LAYERS[from] ? 'same layer' : 'UP';
    console.log(`${key}: ${count} (${way})`);
  }
}
if (problems.length > 0) {
  console.error(`check-layers: ${problems.length} upward import${problems.length === 1 ? '' : 's'}:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log('check-layers: no upward import');
