import type { FastifyInstance } from 'fastify';
import { type RowSelection, parseSelection } from '../domain/requests/row-list-query.ts';
import { intParam, readQuery } from '../domain/query-string.ts';
import { type ErrorDetail, invalid } from '../domain/errors.ts';
import { EXPORT_ENCODINGS, type ExportEncoding, textEncoder } from '../export/encodings.ts';
import { exportStream } from '../export/export-stream.ts';
import { EXPORT_FORMATS, FORMAT_INFO, type ExportFormat, rowFormatter } from '../export/formats.ts';
import { type RowsDeps, withTable } from './rows-routes.ts';

const EXPORT_PARAMS = ['format', 'encoding', 'newline', 'header', 'limit', 'filter', 'sort'] as const;
type ExportParam = (typeof EXPORT_PARAMS)[number];
const NEWLINES = { crlf: '\r\n', lf: '\n' } as const;

function oneOf<T extends string>(name: string, value: string | undefined, allowed: readonly T[], details: ErrorDetail[]): T | undefined {
  if (value === undefined) details.push({ path: name, message: `is required: one of ${allowed.join(', ')}` });
  else if (!(allowed as readonly string[]).includes(value)) details.push({ path: name, message: `must be one of ${allowed.join(', ')}` });
  else return value as T;
  return undefined;
}

interface ExportQuery {
  format: ExportFormat;
  encoding: ExportEncoding;
  newline: keyof typeof NEWLINES;
  header: boolean;
  limit: number | null;
  selection: RowSelection;
}

/** Reads and checks the whole query; every problem is reported in one 400 (CONTRACT §3). */
function readExportQuery(query: Record<string, unknown>, table: Parameters<typeof parseSelection>[1]): ExportQuery {
  const details: ErrorDetail[] = [];
  const params = readQuery(query, EXPORT_PARAMS, details);
  // A parameter given more than once is reported as such, not also as missing.
  const checked = <T extends string>(name: ExportParam, allowed: readonly T[]) =>
    query[name] !== undefined && params[name] === undefined ? undefined : oneOf<T>(name, params[name], allowed, details);
  const format = checked<ExportFormat>('format', EXPORT_FORMATS);
  const encoding = checked<ExportEncoding>('encoding', EXPORT_ENCODINGS);
  const newline = checked<keyof typeof NEWLINES>('newline', ['crlf', 'lf']);
  if (params.header !== undefined && params.header !== 'true' && params.header !== 'false') {
    details.push({ path: 'header', message: 'must be true or false' });
  }
  const limit = params.limit === undefined ? null : intParam('limit', params.limit, 1, 1000, 1000, details);
  const selection = parseSelection(params, table, details);
  if (details.length > 0 || !format || !encoding || !newline) throw invalid(details, 'Invalid export query');
  return { format, encoding, newline, header: params.header !== 'false', limit, selection };
}

/** GET /rows-export (the seed spec's "Export rows", CONTRACT §7): every parameter checked before the first byte. */
export function exportRoutes(app: FastifyInstance, deps: RowsDeps): void {
  app.get<{ Params: { table: string } }>('/api/tables/:table/rows-export', async (request, reply) => {
    // Planned again when the table's fields change under it (rows-routes.ts withTable), up to its first rows.
    const { table, q, encoder, stream } = await withTable(deps, request.params.table, async (table) => {
      const q = readExportQuery(request.query as Record<string, unknown>, table);
      const encoder = textEncoder(q.encoding);
      const stream = await exportStream({
        database: deps.database,
        rows: deps.rows,
        table,
        selection: q.selection,
        limit: q.limit,
        formatter: rowFormatter(q.format, table.fields, NEWLINES[q.newline], q.header, deps.database.dialect),
        encoder,
      });
      return { table, q, encoder, stream };
    });
    const info = FORMAT_INFO[q.format];
    const name = `${table.code ?? table.id}.${info.extension}`;
    reply
      .header('content-type', `${info.contentType}; charset=${encoder.charset}`)
      .header('content-disposition', `attachment; filename="${name}"`)
      .header('cache-control', 'no-store');
    return reply.send(stream);
  });
}
