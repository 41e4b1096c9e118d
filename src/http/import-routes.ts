import type { FastifyInstance } from 'fastify';
import type { Readable } from 'node:stream';
import type { ErrorDetail } from '../domain/errors.ts';
import { invalid } from '../domain/errors.ts';
import type { FileRow } from '../domain/row.ts';
import { FileRows } from '../import/file-rows.ts';
import { withBoundedHeapGrowth } from '../import/heap-growth.ts';
import { IMPORT_ENCODINGS, IMPORT_FORMATS, type ImportEncoding, type ImportFormat, fileProblem, fileRecords } from '../import/read-file.ts';
import { type ImportOptions, RowImporter } from '../store/row-import.ts';
import { writeContext } from './auth.ts';
import { streamedBody } from './request-bodies.ts';
import { type RowsDeps, tableOr404 } from './rows-routes.ts';

const IMPORT_PARAMS = ['format', 'encoding', 'mode', 'atomic'];

interface ImportQuery extends ImportOptions {
  format: ImportFormat;
  encoding: ImportEncoding;
}

/** `?format&encoding[&mode][&atomic]`, every problem at once. */
function importQuery(query: Record<string, unknown>): ImportQuery {
  const details: ErrorDetail[] = [];
  for (const key of Object.keys(query)) {
    if (!IMPORT_PARAMS.includes(key)) details.push({ path: key, message: `unknown query parameter; use ${IMPORT_PARAMS.join(', ')}` });
  }
  const pick = <T extends string>(name: string, allowed: readonly T[], fallback?: T): T | undefined => {
    const value = query[name];
    if (value === undefined && fallback !== undefined) return fallback;
    if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
    details.push({ path: name, message: `${value === undefined ? 'is required: ' : 'must be '}one of ${allowed.join(', ')}` });
    return undefined;
  };
  const format = pick('format', IMPORT_FORMATS);
  const encoding = pick('encoding', IMPORT_ENCODINGS);
  const mode = pick('mode', ['create', 'upsert'] as const, 'create');
  const atomic = pick('atomic', ['true', 'false'] as const, 'true');
  if (details.length > 0 || !format || !encoding || !mode || !atomic) throw invalid(details, 'Invalid import query');
  return { format, encoding, mode, atomic: atomic === 'true' };
}

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
      { config: { queryOptions: true } },
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
