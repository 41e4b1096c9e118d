import type { FastifyReply } from 'fastify';
import { signCursor } from '../domain/cursor.ts';
import { type AggregateRequest, nextAggregateQuery } from '../domain/requests/aggregate-query.ts';
import type { AggregatePlan } from '../plan/aggregate-plan.ts';
import { type AggregatePage, groupColumn, metricColumn } from '../store/aggregate-sql.ts';
import type { Dialect } from '../store/dialect.ts';
import { JSON_TYPE } from './row-json.ts';

/**
 * The answer of GET /rows-aggregate (CONTRACT §13): `{"data": [{"group", "metrics"}], "nextUrl"}`,
 * the next page's URL also as a Link header. Group keys and min/max are written in their field's
 * own format, bucket labels as the database made them; counts are exact, sums and averages doubles.
 */

export interface AggregateRenderDeps {
  database: { readonly dialect: Dialect };
  secret: string;
  publicUrl: string;
}

/** A group's JSON: its keys by field and its metrics by name, in the request's order. */
function groupJson(request: AggregateRequest, row: Record<string, unknown>, dialect: Dialect): { group: Record<string, unknown>; metrics: Record<string, unknown> } {
  const group: Record<string, unknown> = {};
  request.groupBy.forEach((g, i) => {
    const v = row[groupColumn(i)];
    group[g.key] = v === null || v === undefined ? null : g.bucket === null ? g.target.type.fromDb(v, dialect) : String(v);
  });
  const metrics: Record<string, unknown> = {};
  request.metrics.forEach((m, i) => {
    const v = row[metricColumn(i)];
    if (m.fn === 'count' || m.fn === 'countDistinct') metrics[m.name] = Number(v ?? 0);
    else if (v === null || v === undefined) metrics[m.name] = null;
    else metrics[m.name] = m.fn === 'sum' || m.fn === 'avg' ? Number(v) : m.target?.type.fromDb(v, dialect);
  });
  return { group, metrics };
}

export function sendAggregate(deps: AggregateRenderDeps, reply: FastifyReply, tableRef: string, plan: AggregatePlan, page: AggregatePage): FastifyReply {
  const { request } = plan;
  let nextUrl: string | null = null;
  if (page.next) {
    nextUrl = `${deps.publicUrl}/api/tables/${encodeURIComponent(tableRef)}/rows-aggregate?${nextAggregateQuery(request, signCursor(deps.secret, request.binding, page.next))}`;
    reply.header('link', `<${nextUrl}>; rel="next"`);
  }
  const data = page.groups.map((row) => groupJson(request, row, deps.database.dialect));
  return reply.type(JSON_TYPE).send(JSON.stringify({ data, nextUrl }));
}
