import type { FastifyInstance } from 'fastify';
import { readExportQuery } from '../domain/requests/export-query.ts';
import { exportStream } from '../export/export-stream.ts';
import { FORMAT_INFO } from '../export/formats.ts';
import { planExport } from '../plan/export-plan.ts';
import { withLinkedTables } from '../store/links/linked-tables.ts';
import { needs } from './access.ts';
import type { RowsDeps } from './rows-routes.ts';
import { withTable } from '../store/execute.ts';

/** GET /rows-export (the seed spec's "Export rows", CONTRACT §7): every parameter checked before the first byte. */
export function exportRoutes(app: FastifyInstance, deps: RowsDeps): void {
  app.get<{ Params: { table: string } }>('/api/tables/:table/rows-export', needs.onTable('rows:export'), async (request, reply) => {
    // Planned again when the table's fields change under it (store/execute.ts withTable), up to its first rows.
    const { plan, file } = await withTable(deps, request.params.table, async (table) => {
      const plan = planExport(table, readExportQuery(request.query as Record<string, unknown>, await withLinkedTables(deps.catalog, deps.database.db, table)));
      return { plan, file: await exportStream(deps, plan) };
    });
    const info = FORMAT_INFO[plan.format];
    const name = `${plan.table.code ?? plan.table.id}.${info.extension}`;
    reply
      .header('content-type', `${info.contentType}; charset=${file.charset}`)
      .header('content-disposition', `attachment; filename="${name}"`)
      .header('cache-control', 'no-store');
    return reply.send(file.stream);
  });
}
