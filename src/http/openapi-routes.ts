import type { FastifyInstance } from 'fastify';
import { FULL_GRANT, isFullGrant } from '../domain/access.ts';
import { isUuid } from '../domain/codes.ts';
import { notFound } from '../domain/errors.ts';
import { tableDocument } from '../openapi/table-document.ts';
import { OPERATION_SCOPES, mayUse, withOperations } from '../openapi/table-operations.ts';
import { needs } from './access.ts';
import type { RowsDeps } from './rows-routes.ts';
import { TableMemo } from '../domain/compiled-table.ts';

// One document per table version: a new version (fields changed) is a new TableDef, with a new CompiledTable.
// Keyed by public URL and, for a limited key, the operations it may use.
const documents = new TableMemo('OpenAPI documents, by public URL and operations listed', () => new Map<string, string>());

/** OpenAPI documents (CONTRACT §10): a table's lists only the operations the calling key may use (CONTRACT §12). */
export function openapiRoutes(app: FastifyInstance, deps: RowsDeps): void {
  app.get<{ Params: { tableId: string } }>('/api/tables/:tableId/openapi', needs.onTable('rows:read'), async (request, reply) => {
    const { tableId } = request.params;
    // By id only, as the specification says: a code names no document.
    const table = isUuid(tableId) ? await deps.catalog.find(deps.database.db, tableId) : undefined;
    if (!table) throw notFound(`table ${tableId} not found (the OpenAPI document is fetched by table id)`);
    const grant = request.principal?.grant ?? FULL_GRANT;
    const operations = isFullGrant(grant) ? undefined : Object.keys(OPERATION_SCOPES).filter((id) => mayUse(grant, table.id, id));
    const key = operations ? `${deps.publicUrl} ${operations.join(',')}` : deps.publicUrl;
    const held = table.compiled.memo(documents);
    let text = held.get(key);
    if (text === undefined) {
      const whole = tableDocument(table, deps.publicUrl);
      text = JSON.stringify(operations ? withOperations(whole, (id) => operations.includes(id)) : whole);
      held.set(key, text);
    }
    return reply.type('application/json; charset=utf-8').send(text);
  });
}
