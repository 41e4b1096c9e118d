import type { FastifyInstance, FastifyReply } from 'fastify';
import { type CursorValue, cursorBinding, readCursor, signCursor } from '../domain/cursor.ts';
import { parseSelection } from '../domain/row-list-query.ts';
import { intParam, readQuery } from '../domain/query-string.ts';
import { checkRowCreate, checkRowPatch, throwIfInvalid } from '../domain/row-values.ts';
import { type ErrorDetail, notFound } from '../errors.ts';
import { type Database, inTransaction } from '../store/database.ts';
import type { RowStore } from '../store/rows.ts';
import type { TableCatalog, TableDef } from '../store/table-catalog.ts';
import { writeContext } from './auth.ts';
import { recordJson, recordsJson } from '../render/row-json.ts';

export interface RowsDeps {
  database: Database;
  catalog: TableCatalog;
  rows: RowStore;
  secret: string;
  publicUrl: string;
}

type TableParams = { Params: { table: string } };
type RowParams = { Params: { table: string; rowId: string } };

/** What Fastify answers objects with: rendered JSON text goes out the same. */
const JSON_TYPE = 'application/json; charset=utf-8';

export const LIST_PARAMS = ['pageSize', 'filter', 'sort', 'cursor'] as const;

/** The table a rows route names by id or code, or a 404. */
export async function tableOr404(deps: RowsDeps, ref: string): Promise<TableDef> {
  const table = await deps.catalog.find(deps.database.db, ref);
  if (!table) throw notFound(`table ${ref} not found`);
  return table;
}

/** Single-row routes and the keyset-paged list (the seed spec's "Table rows", CONTRACT §5-6). */
export function rowsRoutes(app: FastifyInstance, deps: RowsDeps): void {
  const { rows, database } = deps;
  const base = '/api/tables/:table/rows';

  app.get<TableParams>(base, async (request, reply: FastifyReply) => {
    const table = await tableOr404(deps, request.params.table);
    const details: ErrorDetail[] = [];
    const params = readQuery(request.query as Record<string, unknown>, LIST_PARAMS, details);
    const pageSize = intParam('pageSize', params.pageSize, 1, 200, 50, details);
    const selection = parseSelection(params, table, details);
    throwIfInvalid(details, 'Invalid list query');
    const keyColumns = selection.keys.map((k) => `${k.target.column}:${k.target.type.name}`);
    const binding = cursorBinding(table.id, selection.canonical.filter, selection.canonical.sort, keyColumns);
    const after = params.cursor === undefined ? null : readCursor(deps.secret, params.cursor, binding, selection.keys.length);
    const raw = await rows.page(database.db, table, { filter: selection.filter, keys: selection.keys, after, limit: pageSize + 1 });
    const page = raw.slice(0, pageSize);
    let nextUrl: string | null = null;
    if (raw.length > pageSize) {
      const last = page[page.length - 1];
      const cursor = signCursor(deps.secret, binding, selection.keys.map((k) => last[k.target.column] as CursorValue));
      const next = new URLSearchParams({ pageSize: String(pageSize) });
      if (selection.filterText !== undefined) next.set('filter', selection.filterText);
      if (selection.sortText !== undefined) next.set('sort', selection.sortText);
      next.set('cursor', cursor);
      nextUrl = `${deps.publicUrl}/api/tables/${encodeURIComponent(request.params.table)}/rows?${next}`;
      reply.header('link', `<${nextUrl}>; rel="next"`);
    }
    return reply.type(JSON_TYPE).send(`{"data":${recordsJson(table, page, database.dialect)},"nextUrl":${JSON.stringify(nextUrl)}}`);
  });

  app.get<RowParams>(`${base}/:rowId`, async (request, reply) => {
    const table = await tableOr404(deps, request.params.table);
    const raw = await rows.getRaw(database.db, table, request.params.rowId);
    if (!raw) throw notFound(`row ${request.params.rowId} not found in table ${request.params.table}`);
    return reply.type(JSON_TYPE).send(recordJson(table, raw, database.dialect));
  });

  app.post<TableParams>(base, async (request, reply) => {
    const table = await tableOr404(deps, request.params.table);
    const details: ErrorDetail[] = [];
    const input = checkRowCreate(request.body, table, '', details);
    throwIfInvalid(details, 'Invalid row');
    const ctx = writeContext(request);
    // An upsert in steps reads, then writes: one transaction, so no other writer comes between.
    const result = rows.createIsOneStatement(input)
      ? await rows.create(database.db, table, input, ctx)
      : await inTransaction(database, (tx) => rows.create(tx, table, input, ctx));
    return reply.status(result.created ? 201 : 200).send(result.row);
  });

  app.patch<RowParams>(`${base}/:rowId`, async (request) => {
    const table = await tableOr404(deps, request.params.table);
    const details: ErrorDetail[] = [];
    const input = checkRowPatch(request.body, table, '', details, false);
    throwIfInvalid(details, 'Invalid row');
    const row = await rows.update(database.db, table, request.params.rowId, input.values, writeContext(request));
    if (!row) throw notFound(`row ${request.params.rowId} not found in table ${request.params.table}`);
    return row;
  });

  app.delete<RowParams>(`${base}/:rowId`, async (request, reply) => {
    const table = await tableOr404(deps, request.params.table);
    if (!(await rows.delete(database.db, table, request.params.rowId))) {
      throw notFound(`row ${request.params.rowId} not found in table ${request.params.table}`);
    }
    return reply.status(204).send();
  });
}
