// The esbuild options of the service's bundle: src/ as one CommonJS file (scripts/build.mjs says
// why). Shared with bench/access.ts, which bundles the same sources the same way a second time with
// one module replaced, so that the two builds it compares differ in that module alone.
import path from 'node:path';

/** The options that bundle `root`/src/cli.ts into `outfile`. */
export function serviceBundleOptions(root, outfile) {
  return {
    entryPoints: [path.join(root, 'src/cli.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    external: ['better-sqlite3', 'pg-native', '@aws-sdk/*', 'swagger-ui-dist'],
    sourcemap: true,
    logLevel: 'warning',
    logOverride: { 'empty-import-meta': 'error' },
    // The one import.meta property src/ may read: the module's folder (src/http/console-routes.ts).
    define: { 'import.meta.dirname': '__dirname' },
  };
}
