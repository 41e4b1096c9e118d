import type { FastifyInstance } from 'fastify';
import { batchTableRefs, parseBatch, parseBulkCreate, parseBulkDelete, parseBulkUpdate } from '../domain/requests/row-requests.ts';
import { planBatch, planBulk } from '../plan/row-plans.ts';
import { sendBatch, sendRecords } from '../render/row-responses.ts';
import { bulkCreate, bulkDelete, bulkUpdate, rerunOnSchemaChange, runBatch, withTable } from '../store/execute.ts';
import type { RowWriter } from '../store/row-writes.ts';
import { writeContext } from './auth.ts';
import { type RowsDeps, expandRows } from './rows-routes.ts';
import { batchExpandOf, expandOf } from '../domain/requests/expand.ts';
import { expandLinks } from '../store/links/expand.ts';

type TableParams = { Params: { table: string } };

/** Bulk writes within one table and the cross-table batch (the seed spec's "Bulk" and "Cross-table batch"). */
export function bulkRoutes(app: FastifyInstance, deps: RowsDeps, writer: RowWriter): void {
  const path = '/api/tables/:table/rows-bulk';

  app.post<TableParams>(path, { config: { expand: true } }, async (request, reply) => {
    const ctx = writeContext(request);
    const { plan, status, data, expanded } = await withTable(deps, request.params.table, async (table) => {
      const expand = expandOf(request.query, table);
      const plan = planBulk('bulk-create', table, parseBulkCreate(request.body, table));
      const done = await bulkCreate(writer, plan, ctx);
      return { plan, ...done, expanded: await expandRows(deps, table, done.data, expand) };
    });
    return sendRecords(deps, reply.status(status), plan.table, data, expanded);
  });

  app.patch<TableParams>(path, { config: { expand: true } }, async (request, reply) => {
    const ctx = writeContext(request);
    const { plan, data, expanded } = await withTable(deps, request.params.table, async (table) => {
      const expand = expandOf(request.query, table);
      const plan = planBulk('bulk-update', table, parseBulkUpdate(request.body, table));
      const data = await bulkUpdate(writer, plan, ctx);
      return { plan, data, expanded: await expandRows(deps, table, data, expand) };
    });
    return sendRecords(deps, reply, plan.table, data, expanded);
  });

  app.delete<TableParams>(path, async (request) => {
    const ctx = writeContext(request);
    return { data: await withTable(deps, request.params.table, (table) => bulkDelete(writer, planBulk('bulk-delete', table, parseBulkDelete(request.body)), ctx)) };
  });

  app.post('/api/rows-batch', { config: { expand: true } }, async (request, reply) => {
    const ctx = writeContext(request);
    // Every table of the batch planned again against the tables as they are now when a field of one was removed while it ran.
    const { results, expanded } = await rerunOnSchemaChange(deps, async (fresh) => {
      const tables = await writer.batchTables(batchTableRefs(request.body), fresh);
      const expand = request.query && Object.hasOwn(request.query, 'expand') ? batchExpandOf(request.query, tables.values()) : [];
      const results = await runBatch(writer, planBatch(parseBatch(request.body, tables)), ctx);
      const expanded = expand.length > 0 ? await expandLinks(deps.database.db, deps.database.dialect, deps.catalog, results, expand) : undefined;
      return { results, expanded };
    });
    return sendBatch(deps, reply, results, expanded);
  });
}
