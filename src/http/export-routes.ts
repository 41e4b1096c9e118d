import type { FastifyInstance } from 'fastify';
import { NEWLINES, readExportQuery } from '../domain/requests/export-query.ts';
import { textEncoder } from '../export/encodings.ts';
import { exportStream } from '../export/export-stream.ts';
import { FORMAT_INFO, rowFormatter } from '../export/formats.ts';
import type { RowsDeps } from './rows-routes.ts';
import { withTable } from '../store/execute.ts';

/** GET /rows-export (the seed spec's "Export rows", CONTRACT §7): every parameter checked before the first byte. */
export function exportRoutes(app: FastifyInstance, deps: RowsDeps): void {
  app.get<{ Params: { table: string } }>('/api/tables/:table/rows-export', async (request, reply) => {
    // Planned again when the table's fields change under it (store/execute.ts withTable), up to its first rows.
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
