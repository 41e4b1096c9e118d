import { createRequire } from 'node:module';
import path from 'node:path';

/**
 * Where better-sqlite3 is, for the worker to load (its own `require` would look from the working
 * directory). Found from the script Node runs (the launcher, a test, a benchmark), then from the
 * working directory: this module cannot name its own place both as the CommonJS build and as the
 * ES module sources.
 */
export function driverPath(): string {
  for (const base of [process.argv[1], path.join(process.cwd(), 'index.js')]) {
    if (!base) continue;
    try {
      return createRequire(path.resolve(base)).resolve('better-sqlite3');
    } catch {
      // Not from there.
    }
  }
  throw new Error('better-sqlite3 cannot be found for the statistics worker');
}
