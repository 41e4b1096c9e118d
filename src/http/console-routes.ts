import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { FileStorage } from '../files/storage.ts';

/**
 * The browser console (CONTRACT §15) at `/console`: the page and its assets as scripts/build-console.mjs
 * built them into dist/console/ (from installed packages: no CDN, it works offline). It needs no key to
 * load; signing in takes an API key, and everything it shows comes from /api with that key.
 */

/**
 * Scripts, styles and connections to this origin only: no inline script, no eval, no other origin.
 * Images: this origin and blob: (none inline). A download opens the file's signed URL, which is
 * this origin's (or the bucket's, which navigation, not fetch, reaches). With files in S3 the
 * browser PUTs an upload's bytes to the bucket's presigned URL: connect-src then also names that
 * one origin (consoleCsp), and nothing wider.
 */
export function consoleCsp(bucket: string | null = null): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' blob:",
    "font-src 'self'",
    `connect-src 'self'${bucket ? ` ${bucket}` : ''}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** The page's CSP when files are on the service's own disk (their upload URLs are this origin's). */
export const CONSOLE_CSP = consoleCsp();

/** A key presigned only to read the origin off its URL: no request is made with it. */
const PROBE_KEY = 'console-csp-origin-probe';
/** An origin a CSP source expression can name as it is: scheme, host name or IPv4 address, port. */
const CSP_ORIGIN = /^https?:\/\/[a-z0-9.-]+(:\d+)?$/;

/**
 * The origin of the storage's presigned upload URLs, or null when the service serves uploads
 * itself: read off one URL presigned for a probe key (signing is local: no request is made), so it
 * is exactly the origin the SDK puts in every upload URL, whether the bucket is addressed by path
 * (`http://minio:9000/bucket/…`) or by host (`https://bucket.s3.eu-west-1.amazonaws.com/…`).
 */
export async function bucketOrigin(storage: FileStorage): Promise<string | null> {
  if (!storage.presigns || !storage.uploadUrl) return null;
  const origin = new URL(await storage.uploadUrl(PROBE_KEY, 60)).origin;
  if (!CSP_ORIGIN.test(origin)) throw new Error(`the bucket's origin ${origin} cannot be named in a Content-Security-Policy`);
  return origin;
}

export interface ConsoleOptions {
  /** Where uploaded files live: with a presigning storage (S3), the page may connect to its bucket's origin. */
  storage?: FileStorage;
  /** The service's public URL (ROWHOUSE_PUBLIC_URL), which its own upload URLs name. */
  publicUrl?: string;
  warn?: (message: string) => void;
}

const attribute = (text: string) => text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * The page as built, told where an upload's bytes may go (console/src/upload-target.ts): the
 * service's public origin, and the bucket's, the one other origin its CSP's connect-src names. The
 * console refuses an upload URL on any other origin. Meta elements: no script, which the CSP forbids.
 */
export function withOrigins(page: string, origins: { service: string | null; bucket: string | null }): string {
  const metas = (
    [
      ['rowhouse-service-origin', origins.service],
      ['rowhouse-bucket-origin', origins.bucket],
    ] as const
  )
    .filter(([, origin]) => origin !== null)
    .map(([name, origin]) => `<meta name="${name}" content="${attribute(origin as string)}">`)
    .join('');
  return page.replace('</head>', `${metas}</head>`);
}

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

export function consoleRoutes(app: FastifyInstance, dir: string = CONSOLE_DIR, options: ConsoleOptions = {}): void {
  // The bucket's origin is found at the first request for the page, and kept; a failure (no
  // credentials yet, say) is told, the page served with the CSP of this origin alone (uploads to the
  // bucket then fail, as they would anyway), and the origin asked again at the next request.
  let bucket: Promise<string | null> | null = null;
  const pageBucket = (): Promise<string | null> => {
    const { storage } = options;
    if (!storage) return Promise.resolve(null);
    bucket ??= bucketOrigin(storage).catch((err: Error) => {
      bucket = null;
      options.warn?.(`console: uploads to the bucket will be refused by the page's CSP: ${err.message}`);
      return null;
    });
    return bucket;
  };
  const service = options.publicUrl ? new URL(options.publicUrl).origin : null;

  // The page is read on each request (it is small, and a rebuild is then seen at once); no-cache.
  app.get('/console', async (_request, reply) => {
    let page: string;
    try {
      page = await fs.promises.readFile(path.join(dir, 'index.html'), 'utf8');
    } catch {
      // The one error format, as every error of the service.
      return reply.status(503).send({ statusCode: 503, error: 'Service Unavailable', message: MISSING });
    }
    const origin = await pageBucket();
    return reply
      .header('content-type', 'text/html; charset=utf-8')
      .header('content-security-policy', consoleCsp(origin))
      .header('cache-control', 'no-cache')
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .send(withOrigins(page, { service, bucket: origin }));
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
