// A test reporter for test/run.mjs: at the end, each test file's time (the sum of its top-level
// tests and suites, hooks inside them included), slowest first, to see where the suite's time goes.
import path from 'node:path';

export default async function* fileTimes(source) {
  const byFile = new Map();
  // A suite made by a helper (eachDatabase) is located in the helper's file: it belongs to the test
  // file its own tests are in, whose results come just before its own.
  let testFile;
  for await (const event of source) {
    const file = event.data?.file;
    if (typeof file === 'string' && file.endsWith('.test.ts')) testFile = file;
    if ((event.type === 'test:pass' || event.type === 'test:fail') && event.data.nesting === 0) {
      const owner = typeof file === 'string' && file.endsWith('.test.ts') ? file : testFile;
      if (owner) byFile.set(owner, (byFile.get(owner) ?? 0) + (event.data.details?.duration_ms ?? 0));
    }
  }
  if (byFile.size === 0) return;
  const rows = [...byFile].sort((a, b) => b[1] - a[1]);
  const total = rows.reduce((s, [, ms]) => s + ms, 0);
  yield `\nTime per test file (top-level tests summed; ${rows.length} files, ${(total / 1000).toFixed(1)} s in all):\n`;
  for (const [file, ms] of rows.slice(0, 25)) yield `${(ms / 1000).toFixed(1).padStart(8)} s  ${path.relative(process.cwd(), file)}\n`;
}
