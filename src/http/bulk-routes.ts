import type { FastifyInstance } from 'fastify';
import { batchTableRefs, parseBatch, parseBulkCreate, parseBulkDelete, parseBulkUpdate } from '../domain/requests/row-requests.ts';
import { JSON_TYPE, batchJson, recordsJson } from '../render/row-json.ts';
import type { RowWriter } from '../store/row-writes.ts';
import { writeContext } from './auth.ts';
import { type RowsDeps, linksFor, rerunOnSchemaChange, withTable } from './rows-routes.ts';

type TableParams = { Params: { table: string } };

/** Bulk writes within one table and the cross-table batch (the seed spec's "Bulk" and "Cross-table batch"). */
export function bulkRoutes(app: FastifyInstance, deps: RowsDeps, writer: RowWriter): void {
  const path = '/api/tables/:table/rows-bulk';

  app.post<TableParams>(path, async (request, reply) => {
    const ctx = writeContext(request);
    const { table, status, data } = await withTable(deps, request.params.table, async (table) => ({
      table,
      ...(await writer.bulkCreate(table, parseBulkCreate(request.body, table), ctx)),
    }));
    const links = await linksFor(deps, data.map((row) => ({ table, row })));
    return reply.status(status).type(JSON_TYPE).send(`{"data":${recordsJson(table, data, deps.database.dialect, links)}}`);
  });

  app.patch<TableParams>(path, async (request, reply) => {
    const ctx = writeContext(request);
    const { table, data } = await withTable(deps, request.params.table, async (table) => ({
      table,
      data: await writer.bulkUpdate(table, parseBulkUpdate(request.body, table), ctx),
    }));
    const links = await linksFor(deps, data.map((row) => ({ table, row })));
    return reply.type(JSON_TYPE).send(`{"data":${recordsJson(table, data, deps.database.dialect, links)}}`);
  });

  app.delete<TableParams>(path, async (request) => {
    const ctx = writeContext(request);
    return { data: await withTable(deps, request.params.table, (table) => writer.bulkDelete(table, parseBulkDelete(request.body), ctx)) };
  });

  app.post('/api/rows-batch', async (request, reply) => {
    const ctx = writeContext(request);
    // Every table of the batch planned again against the tables as they are now when a field of one was removed while it ran.
    const results = await rerunOnSchemaChange(deps, async (fresh) =>
      writer.batch(parseBatch(request.body, await writer.batchTables(batchTableRefs(request.body), fresh)), ctx),
    );
    return reply.type(JSON_TYPE).send(batchJson(results, deps.database.dialect, await linksFor(deps, results)));
  });
}
