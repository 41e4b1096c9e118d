import type { FastifyInstance } from 'fastify';
import { isUuid } from '../domain/codes.ts';
import { notFound } from '../domain/errors.ts';
import { tableDocument } from '../openapi/table-document.ts';
import type { RowsDeps } from './rows-routes.ts';
import { TableMemo } from '../domain/compiled-table.ts';

// One document per table version: a new version (fields changed) is a new TableDef, with a new CompiledTable.
const documents = new TableMemo('OpenAPI documents, by public URL', () => new Map<string, string>());

/** OpenAPI documents (CONTRACT §10). */
export function openapiRoutes(app: FastifyInstance, deps: RowsDeps): void {
  app.get<{ Params: { tableId: string } }>('/api/tables/:tableId/openapi', async (request, reply) => {
    const { tableId } = request.params;
    // By id only, as the specification says: a code names no document.
    const table = isUuid(tableId) ? await deps.catalog.find(deps.database.db, tableId) : undefined;
    if (!table) throw notFound(`table ${tableId} not found (the OpenAPI document is fetched by table id)`);
    const held = table.compiled.memo(documents);
    let text = held.get(deps.publicUrl);
    if (text === undefined) {
      text = JSON.stringify(tableDocument(table, deps.publicUrl));
      held.set(deps.publicUrl, text);
    }
    return reply.type('application/json; charset=utf-8').send(text);
  });
}
