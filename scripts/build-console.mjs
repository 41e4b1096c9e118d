// The browser console (CONTRACT §15): console/ bundled by Vite into dist/console/ (index.html and
// hashed assets), from installed packages only, so the service serves it offline. Run by
// scripts/build.mjs (so `npm ci`, through prepare, and `npm run build` make it), and on its own by
// `npm run build:console`. Not committed (dist/ is ignored).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const consoleOut = path.join(root, 'dist', 'console');

export async function buildConsole() {
  await build({
    root: path.join(root, 'console'),
    // Relative asset URLs, rewritten below for a page served at /console (not /console/), so the
    // console works wherever a proxy mounts the service.
    base: './',
    configFile: false,
    logLevel: 'warn',
    // React's API on Preact (preact/compat): the same components, TanStack Table and Virtual
    // included, in a seventh of the size (docs/decisions.md, Console).
    resolve: {
      alias: [
        { find: /^react-dom\/client$/, replacement: 'preact/compat/client' },
        { find: /^react-dom$/, replacement: 'preact/compat' },
        { find: /^react\/jsx-runtime$/, replacement: 'preact/jsx-runtime' },
        { find: /^react$/, replacement: 'preact/compat' },
      ],
    },
    build: {
      outDir: consoleOut,
      emptyOutDir: true,
      assetsDir: 'assets',
      // No inlined assets: every script, style and image is a file of this origin (the CSP allows no data: script).
      assetsInlineLimit: 0,
      modulePreload: { polyfill: false },
      sourcemap: false,
      reportCompressedSize: false,
    },
  });
  const index = path.join(consoleOut, 'index.html');
  fs.writeFileSync(index, fs.readFileSync(index, 'utf8').replaceAll('"./assets/', '"console/assets/'));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildConsole();
