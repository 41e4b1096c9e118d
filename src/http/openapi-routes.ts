import type { FastifyInstance } from 'fastify';
import { isUuid } from '../domain/codes.ts';
import { notFound } from '../domain/errors.ts';
import { tableDocument } from '../openapi/table-document.ts';
import type { RowsDeps } from './rows-routes.ts';
import type { TableDef } from '../domain/table.ts';

/** OpenAPI documents (CONTRACT §10). */
export function openapiRoutes(app: FastifyInstance, deps: RowsDeps): void {
  // One document per table version: a new version (fields changed) is a new TableDef.
  const documents = new WeakMap<TableDef, string>();

  app.get<{ Params: { tableId: string } }>('/api/tables/:tableId/openapi', async (request, reply) => {
    const { tableId } = request.params;
    // By id only, as the specification says: a code names no document.
    const table = isUuid(tableId) ? await deps.catalog.find(deps.database.db, tableId) : undefined;
    if (!table) throw notFound(`table ${tableId} not found (the OpenAPI document is fetched by table id)`);
    let text = documents.get(table);
    if (text === undefined) {
      text = JSON.stringify(tableDocument(table, deps.publicUrl));
      documents.set(table, text);
    }
    return reply.type('application/json; charset=utf-8').send(text);
  });
}
