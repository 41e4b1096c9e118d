import type { FastifyInstance } from 'fastify';
import { parseRowList } from '../domain/requests/row-list-query.ts';
import { parseRowCreate, parseRowPatch } from '../domain/requests/row-requests.ts';
import { notFound } from '../domain/errors.ts';
import type { Database } from '../store/database.ts';
import type { Files } from '../files/files.ts';
import type { RowStore } from '../store/rows.ts';
import type { TableCatalog } from '../store/table-catalog.ts';
import { needs, rowNeeds, upserts } from './access.ts';
import { writeContext } from './auth.ts';
import { expanding } from './write-query.ts';
import { keptByCreate } from './idempotency.ts';
import { JSON_TYPE } from '../render/row-json.ts';
import { planRowCreate, planRowDelete, planRowRead, planRowUpdate } from '../plan/row-plans.ts';
import { createRow, deleteRow, readPage, readRow, updateRow, withTable } from '../store/execute.ts';
import { sendPage, sendRecord } from '../render/row-responses.ts';
import { withLinkedTables } from '../store/links/linked-tables.ts';
import { type Expanded, expandLinks } from '../store/links/expand.ts';
import { expandOf } from '../domain/requests/expand.ts';
import type { FieldDef } from '../domain/field-types/field-type.ts';
import type { RawRow } from '../domain/row.ts';
import type { TableDef } from '../domain/table.ts';

export interface RowsDeps {
  database: Database;
  catalog: TableCatalog;
  rows: RowStore;
  files: Files;
  secret: string;
  publicUrl: string;
}

type TableParams = { Params: { table: string } };
type RowParams = { Params: { table: string; rowId: string } };

/** The rows an answer's expanded link fields name (none asked: nothing read). */
export async function expandRows(deps: RowsDeps, table: TableDef, rows: readonly RawRow[], fields: readonly FieldDef[]): Promise<Expanded | undefined> {
  if (fields.length === 0) return undefined;
  return expandLinks(deps.database, deps.catalog, rows.map((row) => ({ table, row })), fields);
}

/**
 * Single-row routes and the keyset-paged list (the seed spec's "Table rows", CONTRACT §5-6). Each
 * handler: the request parsed against its table (domain/requests/), planned (plan/), executed
 * (store/execute.ts, run again when the table's fields change under it), rendered (render/).
 */
export function rowsRoutes(app: FastifyInstance, deps: RowsDeps): void {
  const { rows } = deps;
  const base = '/api/tables/:table/rows';

  app.get<TableParams>(base, needs.onTable('rows:read'), async (request, reply) => {
    const { q, plan, page, expanded } = await withTable(deps, request.params.table, async (table) => {
      const q = parseRowList(request.query as Record<string, unknown>, await withLinkedTables(deps.catalog, deps.database.db, table), deps.secret);
      const plan = planRowRead(table, q.selection, q.after, q.pageSize, q.expand);
      const page = await readPage(deps, plan);
      return { q, plan, page, expanded: await expandRows(deps, table, page.rows, q.expand) };
    });
    return sendPage(deps, reply, request.params.table, q, plan, page, expanded);
  });

  app.get<RowParams>(`${base}/:rowId`, needs.onTable('rows:read'), async (request, reply) => {
    const { table, raw, expanded } = await withTable(deps, request.params.table, async (table) => {
      const expand = expandOf(request.query, table);
      const raw = await readRow(deps, table, request.params.rowId);
      return { table, raw, expanded: raw ? await expandRows(deps, table, [raw], expand) : undefined };
    });
    if (!raw) throw notFound(`row ${request.params.rowId} not found in table ${request.params.table}`);
    return sendRecord(deps, reply, table, raw, expanded);
  });

  // An upsert may update the row: it needs rows:update too.
  const create = needs.rule((request) => rowNeeds(request, 'rows:create', ...(upserts(request.body) ? (['rows:update'] as const) : [])));
  // With an Idempotency-Key, a create keeps its answer (its row's record, 201) in its own write.
  app.post<TableParams>(base, keptByCreate(expanding(create), { status: 201, contentType: JSON_TYPE }), async (request, reply) => {
    const ctx = writeContext(request);
    const { plan, result, expanded } = await withTable(deps, request.params.table, async (table) => {
      const expand = expandOf(request.query, table);
      const plan = planRowCreate(table, request.params.table, parseRowCreate(request.body, table), rows);
      const result = await createRow(deps, plan, ctx);
      return { plan, result, expanded: await expandRows(deps, table, [result.row], expand) };
    });
    return sendRecord(deps, reply.status(result.created ? 201 : 200), plan.table, result.row, expanded);
  });

  app.patch<RowParams>(`${base}/:rowId`, expanding(needs.onTable('rows:update')), async (request, reply) => {
    const ctx = writeContext(request);
    const { plan, row, expanded } = await withTable(deps, request.params.table, async (table) => {
      const expand = expandOf(request.query, table);
      const plan = planRowUpdate(table, request.params.table, request.params.rowId, parseRowPatch(request.body, table), rows);
      const row = await updateRow(deps, plan, ctx);
      return { plan, row, expanded: await expandRows(deps, table, [row], expand) };
    });
    return sendRecord(deps, reply, plan.table, row, expanded);
  });

  app.delete<RowParams>(`${base}/:rowId`, needs.onTable('rows:delete'), async (request, reply) => {
    const ctx = writeContext(request);
    await withTable(deps, request.params.table, (table) => deleteRow(deps, planRowDelete(table, request.params.table, request.params.rowId, rows), ctx));
    return reply.status(204).send();
  });
}
