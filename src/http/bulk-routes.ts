import type { FastifyInstance } from 'fastify';
import { batchTableRefs, parseBatch, parseBulkCreate, parseBulkDelete, parseBulkUpdate } from '../domain/row-requests.ts';
import { JSON_TYPE, batchJson, recordsJson } from '../render/row-json.ts';
import type { RowWriter } from '../store/row-writes.ts';
import { writeContext } from './auth.ts';
import { type RowsDeps, linksFor, tableOr404 } from './rows-routes.ts';

type TableParams = { Params: { table: string } };

/** Bulk writes within one table and the cross-table batch (the seed spec's "Bulk" and "Cross-table batch"). */
export function bulkRoutes(app: FastifyInstance, deps: RowsDeps, writer: RowWriter): void {
  const path = '/api/tables/:table/rows-bulk';

  app.post<TableParams>(path, async (request, reply) => {
    const table = await tableOr404(deps, request.params.table);
    const { status, data } = await writer.bulkCreate(table, parseBulkCreate(request.body, table), writeContext(request));
    const links = await linksFor(deps, data.map((row) => ({ table, row })));
    return reply.status(status).type(JSON_TYPE).send(`{"data":${recordsJson(table, data, deps.database.dialect, links)}}`);
  });

  app.patch<TableParams>(path, async (request, reply) => {
    const table = await tableOr404(deps, request.params.table);
    const data = await writer.bulkUpdate(table, parseBulkUpdate(request.body, table), writeContext(request));
    const links = await linksFor(deps, data.map((row) => ({ table, row })));
    return reply.type(JSON_TYPE).send(`{"data":${recordsJson(table, data, deps.database.dialect, links)}}`);
  });

  app.delete<TableParams>(path, async (request) => {
    const table = await tableOr404(deps, request.params.table);
    const ctx = writeContext(request);
    return { data: await writer.bulkDelete(table, parseBulkDelete(request.body), ctx) };
  });

  app.post('/api/rows-batch', async (request, reply) => {
    const operations = parseBatch(request.body, await writer.batchTables(batchTableRefs(request.body)));
    const results = await writer.batch(operations, writeContext(request));
    return reply.type(JSON_TYPE).send(batchJson(results, deps.database.dialect, await linksFor(deps, results)));
  });
}
