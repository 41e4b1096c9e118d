import type { FastifyInstance } from 'fastify';
import { atOperation, batchOperationTables, batchTableRefs, parseBatch, parseBulkCreate, parseBulkDelete, parseBulkUpdate } from '../domain/requests/row-requests.ts';
import { planBatch, planBulk } from '../plan/row-plans.ts';
import { sendBatch, sendRecords } from '../render/row-responses.ts';
import { bulkCreate, bulkDelete, bulkUpdate, rerunOnSchemaChange, runBatch, withTable } from '../store/execute.ts';
import type { RowWriter } from '../store/row-writes.ts';
import type { Scope } from '../domain/access.ts';
import { type DeclaredNeed, needs, rowNeeds, upserts } from './access.ts';
import { writeContext } from './auth.ts';
import { expanding } from './write-query.ts';
import { type RowsDeps, expandRows } from './rows-routes.ts';
import { batchExpandOf, expandOf } from '../domain/requests/expand.ts';
import { expandLinks } from '../store/links/expand.ts';

type TableParams = { Params: { table: string } };

/**
 * A batch's needs: each operation the scope of its kind on its table (an upsert create rows:update
 * too), named by its index; with `expand`, rows:read on the tables its codes reach from each
 * table of the batch, that table itself included through a self-link (CONTRACT §12: a link's
 * expand needs rows:read on the target table).
 */
function batchNeeds(body: unknown, query: unknown): DeclaredNeed[] {
  const operations = batchOperationTables(body);
  const out = operations.flatMap(({ index, type, tableRef, upsert }): DeclaredNeed[] => {
    const need = (scope: Scope): DeclaredNeed => ({ scopes: [scope], table: tableRef, placed: (err) => atOperation(err, index) });
    return upsert ? [need('rows:create'), need('rows:update')] : [need(`rows:${type}`)];
  });
  const expand = (query as Record<string, unknown> | undefined)?.expand;
  if (expand !== undefined) {
    for (const table of new Set(operations.map((o) => o.tableRef))) out.push({ scopes: ['rows:read'], table, reach: { expand }, reachSelf: true });
  }
  return out;
}

/** Bulk writes within one table and the cross-table batch (the seed spec's "Bulk" and "Cross-table batch"). */
export function bulkRoutes(app: FastifyInstance, deps: RowsDeps, writer: RowWriter): void {
  const path = '/api/tables/:table/rows-bulk';

  // An item with upsert may update its row: rows:update too.
  const create = needs.rule((request) => {
    const body = request.body as { data?: unknown } | undefined;
    const upsert = upserts(body) || (Array.isArray(body?.data) && body.data.some(upserts));
    return rowNeeds(request, 'rows:create', ...(upsert ? (['rows:update'] as const) : []));
  });
  app.post<TableParams>(path, expanding(create), async (request, reply) => {
    const ctx = writeContext(request);
    const { plan, status, data, expanded } = await withTable(deps, request.params.table, async (table) => {
      const expand = expandOf(request.query, table);
      const plan = planBulk('bulk-create', table, parseBulkCreate(request.body, table));
      const done = await bulkCreate(writer, plan, ctx);
      return { plan, ...done, expanded: await expandRows(deps, table, done.data, expand) };
    });
    return sendRecords(deps, reply.status(status), plan.table, data, expanded);
  });

  app.patch<TableParams>(path, expanding(needs.onTable('rows:update')), async (request, reply) => {
    const ctx = writeContext(request);
    const { plan, data, expanded } = await withTable(deps, request.params.table, async (table) => {
      const expand = expandOf(request.query, table);
      const plan = planBulk('bulk-update', table, parseBulkUpdate(request.body, table));
      const data = await bulkUpdate(writer, plan, ctx);
      return { plan, data, expanded: await expandRows(deps, table, data, expand) };
    });
    return sendRecords(deps, reply, plan.table, data, expanded);
  });

  app.delete<TableParams>(path, needs.onTable('rows:delete'), async (request) => {
    const ctx = writeContext(request);
    return { data: await withTable(deps, request.params.table, (table) => bulkDelete(writer, planBulk('bulk-delete', table, parseBulkDelete(request.body)), ctx)) };
  });

  // Each operation needs the scope of its kind on its table.
  app.post('/api/rows-batch', expanding(needs.rule((request) => batchNeeds(request.body, request.query))), async (request, reply) => {
    const ctx = writeContext(request);
    // Every table of the batch planned again against the tables as they are now when a field of one was removed while it ran.
    const { results, expanded } = await rerunOnSchemaChange(deps, async (fresh) => {
      const tables = await writer.batchTables(batchTableRefs(request.body), fresh);
      const expand = request.query && Object.hasOwn(request.query, 'expand') ? batchExpandOf(request.query, tables.values()) : [];
      const results = await runBatch(writer, planBatch(parseBatch(request.body, tables)), ctx);
      const expanded = expand.length > 0 ? await expandLinks(deps.database, deps.catalog, results, expand) : undefined;
      return { results, expanded };
    });
    return sendBatch(deps, reply, results, expanded);
  });
}
