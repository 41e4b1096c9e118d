import type { FastifyReply } from 'fastify';
import { type CursorValue, signCursor } from '../domain/cursor.ts';
import type { FileLinks } from '../domain/file-value.ts';
import { type RowListRequest, nextPageQuery } from '../domain/requests/row-list-query.ts';
import type { RawRow } from '../domain/row.ts';
import type { TableDef } from '../domain/table.ts';
import type { Files } from '../files/files.ts';
import type { RowReadPlan } from '../plan/row-plans.ts';
import type { Dialect } from '../store/dialect.ts';
import type { Expanded } from '../store/links/expand.ts';
import { JSON_TYPE, batchJson, writeRecords, writeWrittenRecords, writtenRecordJson } from './row-json.ts';
import { Utf8Out } from './utf8-out.ts';

/**
 * The render stage of the rows routes: records as JSON, a page's nextUrl and Link header, and the
 * signed download URLs of the file values in them.
 */

export interface RenderDeps {
  database: { readonly dialect: Dialect };
  files: Files;
  /** Signs the next page's cursor. */
  secret: string;
  publicUrl: string;
}

/** How to sign the download URLs of the file values in rows about to be rendered (none without file fields). */
async function linksFor(files: Files, rows: readonly { table: TableDef; row: RawRow | null }[]): Promise<FileLinks | undefined> {
  const withFiles = rows.filter((r): r is { table: TableDef; row: RawRow } => r.row !== null && r.table.hasFiles);
  return withFiles.length > 0 ? files.links(withFiles) : undefined;
}

/** linksFor the rows of one table; without file fields, nothing is built and nothing awaited. */
async function tableLinks(files: Files, table: TableDef, rows: readonly RawRow[]): Promise<FileLinks | undefined> {
  return linksFor(files, rows.map((row) => ({ table, row })));
}

/** One row: GET, POST, PATCH /rows (a written row's record as its change entry was rendered, when that is the answer). */
export async function sendRecord(deps: RenderDeps, reply: FastifyReply, table: TableDef, row: RawRow, expanded?: Expanded): Promise<FastifyReply> {
  const links = table.hasFiles ? await tableLinks(deps.files, table, [row]) : undefined;
  return reply.type(JSON_TYPE).send(writtenRecordJson(table, row, deps.database.dialect, links, expanded));
}

/** Rows of one table as `{"data": [...]}`: the bulk writes. */
export async function sendRecords(deps: RenderDeps, reply: FastifyReply, table: TableDef, rows: readonly RawRow[], expanded?: Expanded): Promise<FastifyReply> {
  const links = table.hasFiles ? await tableLinks(deps.files, table, rows) : undefined;
  const out = new Utf8Out(rows.length * 512);
  out.text('{"data":');
  writeWrittenRecords(out, table, rows, deps.database.dialect, links, expanded);
  out.text('}');
  return reply.type(JSON_TYPE).send(out.bytes());
}

/**
 * A page of a list (GET /rows): its records, and the URL of the next page (also as a Link header)
 * with the request's own parameters and a signed cursor after the page's last row.
 */
export async function sendPage(
  deps: RenderDeps,
  reply: FastifyReply,
  tableRef: string,
  request: RowListRequest,
  plan: RowReadPlan,
  page: { rows: readonly RawRow[]; next: CursorValue[] | null },
  expanded?: Expanded,
): Promise<FastifyReply> {
  let nextUrl: string | null = null;
  if (page.next) {
    nextUrl = `${deps.publicUrl}/api/tables/${encodeURIComponent(tableRef)}/rows?${nextPageQuery(request, signCursor(deps.secret, request.binding, page.next))}`;
    reply.header('link', `<${nextUrl}>; rel="next"`);
  }
  const links = plan.table.hasFiles ? await tableLinks(deps.files, plan.table, page.rows) : undefined;
  const out = new Utf8Out(page.rows.length * (expanded === undefined ? 512 : 1536));
  out.text('{"data":');
  writeRecords(out, plan.table, page.rows, deps.database.dialect, links, expanded);
  out.text(`,"nextUrl":${JSON.stringify(nextUrl)}}`);
  return reply.type(JSON_TYPE).send(out.bytes());
}

/** What each operation of a batch did, in order. */
export async function sendBatch(deps: RenderDeps, reply: FastifyReply, results: readonly { type: string; table: TableDef; row: RawRow | null }[], expanded?: Expanded): Promise<FastifyReply> {
  return reply.type(JSON_TYPE).send(batchJson(results, deps.database.dialect, await linksFor(deps.files, results), expanded));
}
