import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import getAbsoluteFSPath from 'swagger-ui-dist/absolute-path.js';
import { type DocumentedResource, serviceDocument } from '../openapi/service-document.ts';

/**
 * The service's own OpenAPI document and its browsable reference (CONTRACT §10): `/openapi.json`,
 * and `/docs`, Swagger UI served from the installed swagger-ui-dist package (no CDN: it works
 * offline). Neither is under /api, so neither needs a key.
 */

/** The files of swagger-ui-dist the page loads, and their types. */
const PACKAGE_FILES: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

// Relative URLs: the page is /docs, so docs/… is under /docs/ and openapi.json is /openapi.json,
// wherever a proxy mounts the service.
const PAGE = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Rowhouse API reference</title>
<link rel="stylesheet" href="docs/swagger-ui.css">
<link rel="icon" type="image/png" href="docs/favicon-32x32.png" sizes="32x32">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/swagger-ui-bundle.js"></script>
<script src="docs/start.js"></script>
</body>
</html>
`;

// A script of its own rather than inline, so the page's CSP allows scripts from this origin only.
// validatorUrl null: by default Swagger UI sends the document to validator.swagger.io.
const START = `window.ui = SwaggerUIBundle({
  url: 'openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
});
`;

/**
 * Scripts and styles from this origin only (Swagger UI sets styles through the DOM, which a CSP
 * allows; it needs no inline <style> or script, and no eval). Some of its images are data: URLs.
 * It fetches the document, and "Try it out" calls the API, on this origin: open the page at the
 * public URL (the document's server) for "Try it out" to work.
 */
const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const etagOf = (text: string) => `"${createHash('sha256').update(text).digest('base64url').slice(0, 27)}"`;

/** Whether the client holds this version already (If-None-Match). */
function fresh(request: FastifyRequest, etag: string): boolean {
  const held = request.headers['if-none-match'];
  return held !== undefined && held.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

/** A text made once, sent with its ETag; `no-cache`, so a new version (a new deploy) is seen at once. */
function sendText(request: FastifyRequest, reply: FastifyReply, type: string, text: string, etag: string): FastifyReply {
  reply.header('content-type', type).header('cache-control', 'no-cache').header('etag', etag).header('x-content-type-options', 'nosniff');
  return fresh(request, etag) ? reply.status(304).send() : reply.send(text);
}

export interface DocsDeps {
  resources: readonly DocumentedResource[];
  publicUrl: string;
}

export function docsRoutes(app: FastifyInstance, deps: DocsDeps): void {
  // The document does not change while the service runs: built on the first request (not at start), then kept.
  let document: { text: string; etag: string } | undefined;
  app.get('/openapi.json', async (request, reply) => {
    if (!document) {
      const text = JSON.stringify(serviceDocument(deps.resources, deps.publicUrl));
      document = { text, etag: etagOf(text) };
    }
    return sendText(request, reply, 'application/json; charset=utf-8', document.text, document.etag);
  });

  const pageEtag = etagOf(PAGE);
  app.get('/docs', async (request, reply) => sendText(request, reply.header('content-security-policy', PAGE_CSP), 'text/html; charset=utf-8', PAGE, pageEtag));
  // The page's relative URLs need /docs, not /docs/.
  app.get('/docs/', async (_request, reply) => reply.redirect('../docs', 301));
  const startEtag = etagOf(START);
  app.get('/docs/start.js', async (request, reply) => sendText(request, reply, 'text/javascript; charset=utf-8', START, startEtag));

  // The package's files, streamed from node_modules; they change only with the package, so the
  // ETag (size and time, as a static file server makes it) is worked out once per file.
  const dir = getAbsoluteFSPath();
  for (const [name, type] of Object.entries(PACKAGE_FILES)) {
    const file = path.join(dir, name);
    let stats: Promise<{ size: number; etag: string }> | undefined;
    app.get(`/docs/${name}`, async (request, reply) => {
      stats ??= fs.promises.stat(file).then((s) => ({ size: s.size, etag: `"${s.size.toString(16)}-${Math.floor(s.mtimeMs).toString(16)}"` }));
      const { size, etag } = await stats;
      reply.header('content-type', type).header('cache-control', 'public, max-age=86400').header('etag', etag).header('x-content-type-options', 'nosniff');
      if (fresh(request, etag)) return reply.status(304).send();
      return reply.header('content-length', size).send(fs.createReadStream(file));
    });
  }
}
