import type { FastifyInstance } from 'fastify';
import { batchTableRefs, parseBatch, parseBulkCreate, parseBulkDelete, parseBulkUpdate } from '../domain/requests/row-requests.ts';
import { planBatch, planBulk } from '../plan/row-plans.ts';
import { sendBatch, sendRecords } from '../render/row-responses.ts';
import { bulkCreate, bulkDelete, bulkUpdate, rerunOnSchemaChange, runBatch, withTable } from '../store/execute.ts';
import type { RowWriter } from '../store/row-writes.ts';
import { writeContext } from './auth.ts';
import type { RowsDeps } from './rows-routes.ts';

type TableParams = { Params: { table: string } };

/** Bulk writes within one table and the cross-table batch (the seed spec's "Bulk" and "Cross-table batch"). */
export function bulkRoutes(app: FastifyInstance, deps: RowsDeps, writer: RowWriter): void {
  const path = '/api/tables/:table/rows-bulk';

  app.post<TableParams>(path, async (request, reply) => {
    const ctx = writeContext(request);
    const { plan, status, data } = await withTable(deps, request.params.table, async (table) => {
      const plan = planBulk('bulk-create', table, parseBulkCreate(request.body, table));
      return { plan, ...(await bulkCreate(writer, plan, ctx)) };
    });
    return sendRecords(deps, reply.status(status), plan.table, data);
  });

  app.patch<TableParams>(path, async (request, reply) => {
    const ctx = writeContext(request);
    const { plan, data } = await withTable(deps, request.params.table, async (table) => {
      const plan = planBulk('bulk-update', table, parseBulkUpdate(request.body, table));
      return { plan, data: await bulkUpdate(writer, plan, ctx) };
    });
    return sendRecords(deps, reply, plan.table, data);
  });

  app.delete<TableParams>(path, async (request) => {
    const ctx = writeContext(request);
    return { data: await withTable(deps, request.params.table, (table) => bulkDelete(writer, planBulk('bulk-delete', table, parseBulkDelete(request.body)), ctx)) };
  });

  app.post('/api/rows-batch', async (request, reply) => {
    const ctx = writeContext(request);
    // Every table of the batch planned again against the tables as they are now when a field of one was removed while it ran.
    const results = await rerunOnSchemaChange(deps, async (fresh) =>
      runBatch(writer, planBatch(parseBatch(request.body, await writer.batchTables(batchTableRefs(request.body), fresh))), ctx),
    );
    return sendBatch(deps, reply, results);
  });
}
