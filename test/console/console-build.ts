import fs from 'node:fs';
import path from 'node:path';
// @ts-expect-error: a plain JavaScript module of the build, without type declarations
import { buildConsole, consoleOut } from '../../scripts/build-console.mjs';

const root = path.resolve(import.meta.dirname, '../..');

/** The newest modification time under a folder, in ms. */
function newest(dir: string): number {
  let latest = 0;
  for (const e of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) latest = Math.max(latest, fs.statSync(path.join(e.parentPath, e.name)).mtimeMs);
  }
  return latest;
}

/**
 * The console's build, made again when console/ is newer than it (an edit since `npm ci` or the last
 * `npm run build`), so a browser test never runs an old console.
 */
export async function freshConsoleBuild(): Promise<void> {
  const index = path.join(consoleOut as string, 'index.html');
  const built = fs.statSync(index, { throwIfNoEntry: false })?.mtimeMs ?? 0;
  if (built < newest(path.join(root, 'console'))) await (buildConsole as () => Promise<void>)();
}
