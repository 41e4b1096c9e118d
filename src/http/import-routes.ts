import type { FastifyInstance } from 'fastify';
import type { Readable } from 'node:stream';
import { importQuery } from '../domain/requests/import-query.ts';
import type { FileRow } from '../domain/row.ts';
import { FileRows } from '../import/file-rows.ts';
import { withBoundedHeapGrowth } from '../import/heap-growth.ts';
import { fileProblem, fileRecords } from '../import/read-file.ts';
import { RowImporter } from '../store/row-import.ts';
import { writeContext } from './auth.ts';
import { streamedBody } from './request-bodies.ts';
import { rowNeeds } from './access.ts';
import type { RowsDeps } from './rows-routes.ts';
import { tableOr404 } from '../store/execute.ts';

/** POST /rows-import: a file in the shapes rows-export writes, streamed into the table. */
export function importRoutes(app: FastifyInstance, deps: RowsDeps, maxFileBytes: number): void {
  const importer = new RowImporter(deps.database, deps.rows);
  app.register(async (files) => {
    // The body is the file, of whatever type the client calls it: read as a stream, never held whole.
    // A stream of its own, not the request: reading stops on a 413, and the socket must live on to answer.
    files.removeAllContentTypeParsers();
    files.addContentTypeParser('*', (request, payload, done) => done(null, streamedBody(request, payload, maxFileBytes)));

    files.post<{ Params: { table: string }; Querystring: Record<string, unknown> }>(
      '/api/tables/:table/rows-import',
      {
        config: {
          queryOptions: true,
          // rows:import, and the write scopes its mode uses (checked before the file is read).
          access: (request) => rowNeeds(request, 'rows:import', 'rows:create', ...((request.query as { mode?: unknown }).mode === 'upsert' ? (['rows:update'] as const) : [])),
        },
      },
      async (request) => {
        const table = await tableOr404(deps, request.params.table);
        const q = importQuery(request.query);
        const ctx = writeContext(request);
        const body = (request.body as Readable | undefined) ?? request.raw;
        const rows = new FileRows(table, q.format);
        const source = async function* (): AsyncGenerator<FileRow[]> {
          for await (const records of fileRecords(body, q.format, q.encoding, maxFileBytes)) {
            const batch = rows.rows(records);
            if (batch.length > 0) yield batch;
          }
          if (!rows.hasHeader) throw fileProblem(1, 'the file is empty: it needs a header line naming the columns');
        };
        const result = await withBoundedHeapGrowth(() => importer.import(table, source(), q, ctx));
        return { ...result, warnings: rows.warnings };
      },
    );
  });
}
