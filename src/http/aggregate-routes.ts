import type { FastifyInstance } from 'fastify';
import { parseAggregate } from '../domain/requests/aggregate-query.ts';
import { planAggregate } from '../plan/aggregate-plan.ts';
import { sendAggregate } from '../render/aggregate-responses.ts';
import { readAggregate, withTable } from '../store/execute.ts';
import { withLinkedTables } from '../store/links/linked-tables.ts';
import type { RowsDeps } from './rows-routes.ts';
import { needs } from './access.ts';

type TableParams = { Params: { table: string } };

/**
 * GET /api/tables/{t}/rows-aggregate (CONTRACT §13): counts, sums and date buckets of a table's
 * rows computed by the database, paged over the groups like rows. Parse (domain/requests/
 * aggregate-query.ts), plan (plan/aggregate-plan.ts), one statement per page (store/aggregate-sql.ts),
 * render (render/aggregate-responses.ts).
 */
export function aggregateRoutes(app: FastifyInstance, deps: RowsDeps): void {
  app.get<TableParams>('/api/tables/:table/rows-aggregate', needs.onTable('rows:read'), async (request, reply) => {
    const { plan, page } = await withTable(deps, request.params.table, async (table) => {
      // The filter may look through links (`_some`, `_none`, `_every`), as a list's may.
      const plan = planAggregate(table, parseAggregate(request.query as Record<string, unknown>, await withLinkedTables(deps.catalog, deps.database.db, table), deps.secret));
      return { plan, page: await readAggregate(deps, plan) };
    });
    return sendAggregate(deps, reply, request.params.table, plan, page);
  });
}
