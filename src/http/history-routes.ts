import type { FastifyInstance } from 'fastify';
import { needs } from './access.ts';
import { notFound } from '../domain/errors.ts';
import { ROW_ID } from '../domain/codes.ts';
import { nextHistoryQuery, parseHistoryQuery } from '../domain/requests/history-query.ts';
import { changeJson } from '../render/change-json.ts';
import { JSON_TYPE } from '../render/row-json.ts';
import { historyPage } from '../store/change-history.ts';
import { planRowHistory } from '../plan/change-plans.ts';
import type { ChangeLog } from '../store/change-log.ts';
import { tableOr404 } from '../store/execute.ts';
import type { RowsDeps } from './rows-routes.ts';

/**
 * GET /api/tables/{t}/rows/{rowId}/history?pageSize&cursor (issue 31, CONTRACT §14): the row's
 * changes as the change log keeps them (within its retention, and after the row's deletion), newest
 * first, `{data: [change], nextUrl}` with `Link` as for lists. A row with no change kept → 404.
 */
export function historyRoutes(api: FastifyInstance, deps: RowsDeps, log: ChangeLog): void {
  api.get<{ Params: { table: string; rowId: string }; Querystring: Record<string, unknown> }>('/api/tables/:table/rows/:rowId/history', needs.onTable('rows:read'), async (request, reply) => {
    const { rowId } = request.params;
    const table = await tableOr404(deps, request.params.table);
    // An id no row can have (codes.ts ROW_ID) has no history, without asking the database (PostgreSQL refuses text with NUL).
    if (!ROW_ID.test(rowId)) throw notFound(`row ${rowId} has no changes kept in table ${request.params.table}`);
    const q = parseHistoryQuery(request.query, table.id, rowId, deps.secret);
    const db = deps.database.db;
    // Only what a reader of the feed may pass: on PostgreSQL no entry still to commit lies below.
    const plan = planRowHistory(table, rowId, q, await log.readableThrough(db, table.id));
    const entries = await historyPage(db, plan);
    if (entries.length === 0 && q.before === null) throw notFound(`row ${rowId} has no changes kept in table ${request.params.table}`);
    const page = entries.slice(0, q.pageSize);
    let nextUrl: string | null = null;
    if (entries.length > q.pageSize) {
      const last = Number(page[page.length - 1].sequence);
      nextUrl = `${deps.publicUrl}/api/tables/${encodeURIComponent(request.params.table)}/rows/${encodeURIComponent(rowId)}/history?${nextHistoryQuery(q, deps.secret, last)}`;
      reply.header('link', `<${nextUrl}>; rel="next"`);
    }
    return reply.type(JSON_TYPE).send(`{"data":[${page.map(changeJson).join(',')}],"nextUrl":${JSON.stringify(nextUrl)}}`);
  });
}
