import type { FastifyInstance, FastifyReply } from 'fastify';
import { signCursor } from '../domain/cursor.ts';
import { nextPageQuery, parseRowList } from '../domain/requests/row-list-query.ts';
import { parseRowCreate, parseRowPatch } from '../domain/requests/row-requests.ts';
import { ServiceError, notFound } from '../domain/errors.ts';
import { type Database, type Db, inTransaction } from '../store/database.ts';
import type { FileLinks } from '../domain/field-types/file.ts';
import type { Files } from '../files/files.ts';
import type { RowStore } from '../store/rows.ts';
import type { TableCatalog } from '../store/table-catalog.ts';
import { writeContext } from './auth.ts';
import { JSON_TYPE, recordJson, recordsJson } from '../render/row-json.ts';
import type { TableDef } from '../domain/table.ts';
import type { RawRow } from '../domain/row.ts';

export interface RowsDeps {
  database: Database;
  catalog: TableCatalog;
  rows: RowStore;
  files: Files;
  secret: string;
  publicUrl: string;
}

/** How to sign the download URLs of the file values in rows about to be rendered (none without file fields). */
export async function linksFor(deps: RowsDeps, rows: readonly { table: TableDef; row: RawRow | null }[]): Promise<FileLinks | undefined> {
  const withFiles = rows.filter((r): r is { table: TableDef; row: RawRow } => r.row !== null && r.table.hasFiles);
  return withFiles.length > 0 ? deps.files.links(withFiles) : undefined;
}

const rowsOf = (table: TableDef, rows: readonly RawRow[]) => rows.map((row) => ({ table, row }));

/** A single-row write: in a transaction of its own where the table's files need one, else as one statement. */
export function singleWrite<T>(deps: RowsDeps, table: TableDef, oneStatement: boolean, work: (db: Db) => Promise<T>): Promise<T> {
  return oneStatement && !deps.rows.needsTransaction(table) ? work(deps.database.db) : inTransaction(deps.database, work);
}

/** Runs of a request whose table's fields changed under it, before its 409 goes out. */
const SCHEMA_RUNS = 3;

/**
 * Whether a request failed because the table's fields changed while it ran: a column its
 * statements name was dropped (the database refuses the statement, so nothing of it was written).
 */
function schemaChanged(deps: RowsDeps, err: unknown): boolean {
  return err instanceof ServiceError ? err.code === 'schema_changed' : deps.database.dialect.isSchemaChanged(err);
}

/**
 * Runs a rows request planned against its tables' definitions. A field removed by a PUT committed
 * meanwhile makes the database refuse the statements of the old definition, whichever fields the
 * request names: `work` is then run again with `fresh` true, to plan against the definitions as
 * the database holds them now (a write naming the removed field then answers 400 like any unknown
 * field). Only a table changing again and again answers the 409 schema_changed.
 */
export async function rerunOnSchemaChange<T>(deps: RowsDeps, work: (fresh: boolean) => Promise<T>): Promise<T> {
  for (let run = 1; ; run++) {
    try {
      return await work(run > 1);
    } catch (err) {
      if (run >= SCHEMA_RUNS || !schemaChanged(deps, err)) throw err;
    }
  }
}

/** rerunOnSchemaChange for a request on one table, named by id or code (a 404 when there is none). */
export function withTable<T>(deps: RowsDeps, ref: string, work: (table: TableDef) => Promise<T>): Promise<T> {
  return rerunOnSchemaChange(deps, async (fresh) => {
    const table = fresh ? await deps.catalog.findFresh(deps.database.db, ref) : await tableOr404(deps, ref);
    if (!table) throw notFound(`table ${ref} not found`);
    return work(table);
  });
}

type TableParams = { Params: { table: string } };
type RowParams = { Params: { table: string; rowId: string } };

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
    const { table, q, page } = await withTable(deps, request.params.table, async (table) => {
      const q = parseRowList(request.query as Record<string, unknown>, table, deps.secret);
      const { filter, keys } = q.selection;
      const text = JSON.stringify([q.selection.filterText ?? null, q.selection.sortText ?? null]);
      return { table, q, page: await rows.page(database.db, table, { filter, keys, after: q.after, limit: q.pageSize, text }) };
    });
    let nextUrl: string | null = null;
    if (page.next) {
      nextUrl = `${deps.publicUrl}/api/tables/${encodeURIComponent(request.params.table)}/rows?${nextPageQuery(q, signCursor(deps.secret, q.binding, page.next))}`;
      reply.header('link', `<${nextUrl}>; rel="next"`);
    }
    const links = await linksFor(deps, rowsOf(table, page.rows));
    return reply.type(JSON_TYPE).send(`{"data":${recordsJson(table, page.rows, database.dialect, links)},"nextUrl":${JSON.stringify(nextUrl)}}`);
  });

  app.get<RowParams>(`${base}/:rowId`, async (request, reply) => {
    const { table, raw } = await withTable(deps, request.params.table, async (table) => ({ table, raw: await rows.get(database.db, table, request.params.rowId) }));
    if (!raw) throw notFound(`row ${request.params.rowId} not found in table ${request.params.table}`);
    return reply.type(JSON_TYPE).send(recordJson(table, raw, database.dialect, await linksFor(deps, [{ table, row: raw }])));
  });

  app.post<TableParams>(base, async (request, reply) => {
    const ctx = writeContext(request);
    const { table, result } = await withTable(deps, request.params.table, async (table) => {
      const input = parseRowCreate(request.body, table);
      // An upsert in steps reads, then writes: one transaction, so no other writer comes between.
      return { table, result: await singleWrite(deps, table, rows.createIsOneStatement(input), (db) => rows.create(db, table, input, ctx)) };
    });
    const links = await linksFor(deps, [{ table, row: result.row }]);
    return reply.status(result.created ? 201 : 200).type(JSON_TYPE).send(recordJson(table, result.row, database.dialect, links));
  });

  app.patch<RowParams>(`${base}/:rowId`, async (request, reply) => {
    const ctx = writeContext(request);
    const { table, row } = await withTable(deps, request.params.table, async (table) => {
      const input = parseRowPatch(request.body, table);
      const row = await singleWrite(deps, table, true, async (db) => {
        const updated = await rows.update(db, table, request.params.rowId, input.values, ctx);
        if (!updated) throw notFound(`row ${request.params.rowId} not found in table ${request.params.table}`);
        return updated;
      });
      return { table, row };
    });
    return reply.type(JSON_TYPE).send(recordJson(table, row, database.dialect, await linksFor(deps, [{ table, row }])));
  });

  app.delete<RowParams>(`${base}/:rowId`, async (request, reply) => {
    const ctx = writeContext(request);
    await withTable(deps, request.params.table, (table) =>
      singleWrite(deps, table, true, async (db) => {
        if (!(await rows.delete(db, table, request.params.rowId, ctx))) throw notFound(`row ${request.params.rowId} not found in table ${request.params.table}`);
      }),
    );
    return reply.status(204).send();
  });
}
