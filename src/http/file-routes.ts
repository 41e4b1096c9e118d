import type { FastifyInstance } from 'fastify';
import type { Readable } from 'node:stream';
import { parseUploadUrlRequest } from '../domain/requests/file-requests.ts';
import type { Files } from '../files/files.ts';
import { streamedBody } from './request-bodies.ts';
import { needs } from './access.ts';
import type { RowsDeps } from './rows-routes.ts';
import { tableOr404 } from '../store/execute.ts';

type FileParams = { Params: { tableId: string; rowId: string; fileId: string }; Querystring: Record<string, unknown> };

/** The three-step upload (the seed spec's "File attachment", CONTRACT §8): its first step, under /api. */
export function fileRoutes(app: FastifyInstance, deps: RowsDeps): void {
  app.post<{ Params: { table: string; rowId: string } }>('/api/tables/:table/rows/:rowId/file-upload-url', needs.anyOnTable('rows:create', 'rows:update'), async (request) => {
    const table = await tableOr404(deps, request.params.table);
    const { rowId, count } = parseUploadUrlRequest(request.params.rowId, request.body);
    return { data: await deps.files.uploadUrls(table, rowId, count) };
  });
}

/** The URLs file-upload-url and row reads hand out: signed, so they need no API key (they are not under /api; public-plugin.ts). */
export function signedFileRoutes(app: FastifyInstance, files: Files, maxFileBytes: number): void {
  app.register(async (signed) => {
    // The body of an upload is the file, of any type: passed on as a stream, never parsed or held.
    // A stream of its own, not the request: storage destroys it on a 413, and the socket must live on to answer.
    signed.removeAllContentTypeParsers();
    signed.addContentTypeParser('*', (request, payload, done) => done(null, streamedBody(request, payload, maxFileBytes)));

    signed.put<FileParams>('/files/:tableId/:rowId/:fileId', async (request) => {
      const length = request.headers['content-length'];
      // No body at all (no Content-Length, not chunked) reaches no parser: an empty file.
      const body = (request.body as Readable | undefined) ?? request.raw;
      const { size } = await files.receive(request.params, request.query, request.headers['content-type'], body, length === undefined ? undefined : Number(length));
      return { id: request.params.fileId, size };
    });

    signed.get<FileParams>('/files/:tableId/:rowId/:fileId', async (request, reply) => {
      const name = typeof request.query.name === 'string' ? request.query.name : '';
      const file = await files.send({ ...request.params, name }, request.query);
      return reply
        .header('content-type', file.contentType)
        .header('content-length', file.size)
        .header('content-disposition', file.disposition)
        // Uploaded bytes are anyone's: never rendered as a page of this origin.
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "default-src 'none'; sandbox")
        .header('cache-control', 'private, max-age=3600')
        .send(file.body);
    });
  });
}
