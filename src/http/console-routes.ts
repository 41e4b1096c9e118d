import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * The browser console (CONTRACT §15) at `/console`: the page and its assets as scripts/build-console.mjs
 * built them into dist/console/ (from installed packages: no CDN, it works offline). It needs no key to
 * load; signing in takes an API key, and everything it shows comes from /api with that key.
 */

/**
 * Scripts, styles and connections to this origin only: no inline script, no eval, no other origin.
 * Images: this origin and blob: (none inline). A download opens the file's signed URL, which is
 * this origin's too (or the bucket's, which navigation, not fetch, reaches).
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

/** The folder holding the project's package.json, from the folder of this module (src/http/, or dist/ once bundled). */
function projectRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json')) && !fs.existsSync(path.join(dir, 'cli.js'))) return dir;
    if (path.dirname(dir) === dir) return from;
  }
}

/** Where the built console is: dist/console/ of the project. */
export const CONSOLE_DIR = path.join(projectRoot(import.meta.dirname), 'dist', 'console');

const MISSING = 'The console is not built: run npm run build (npm ci does it).';

export function consoleRoutes(app: FastifyInstance, dir: string = CONSOLE_DIR): void {
  // The page is read on each request (it is small, and a rebuild is then seen at once); no-cache.
  app.get('/console', async (_request, reply) => {
    let page: string;
    try {
      page = await fs.promises.readFile(path.join(dir, 'index.html'), 'utf8');
    } catch {
      // The one error format, as every error of the service.
      return reply.status(503).send({ statusCode: 503, error: 'Service Unavailable', message: MISSING });
    }
    return reply
      .header('content-type', 'text/html; charset=utf-8')
      .header('content-security-policy', CONSOLE_CSP)
      .header('cache-control', 'no-cache')
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .send(page);
  });
  // The page's relative URLs need /console, not /console/.
  app.get('/console/', async (request, reply) => reply.redirect(`../console${request.url.slice('/console/'.length)}`, 301));

  // Hashed file names: a file never changes under its name, so it is kept for a year.
  app.get<{ Params: { file: string } }>('/console/assets/:file', async (request: FastifyRequest<{ Params: { file: string } }>, reply: FastifyReply) => {
    const { file } = request.params;
    const type = TYPES[path.extname(file)];
    if (!/^[A-Za-z0-9._-]+$/.test(file) || file.startsWith('.') || type === undefined) return reply.callNotFound();
    const full = path.join(dir, 'assets', file);
    const stats = await fs.promises.stat(full).catch(() => null);
    if (!stats?.isFile()) return reply.callNotFound();
    return reply
      .header('content-type', type)
      .header('content-length', stats.size)
      .header('cache-control', 'public, max-age=31536000, immutable')
      .header('x-content-type-options', 'nosniff')
      .send(fs.createReadStream(full));
  });
}
