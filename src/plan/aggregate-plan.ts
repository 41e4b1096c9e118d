import type { AggregateRequest } from '../domain/requests/aggregate-query.ts';
import type { TableDef } from '../domain/table.ts';

/**
 * A page of groups of one table's rows (GET /rows-aggregate, CONTRACT §13): the parsed request as
 * the store runs it, as ONE statement (store/aggregate-sql.ts): the rows filtered, grouped by the
 * group keys and measured by the metrics in the database, `having` and the keyset over the groups'
 * order applied to the groups, at most `limit` + 1 of them read.
 */
export interface AggregatePlan {
  kind: 'aggregate';
  table: TableDef;
  request: AggregateRequest;
  limit: number;
}

export function planAggregate(table: TableDef, request: AggregateRequest): AggregatePlan {
  return { kind: 'aggregate', table, request, limit: request.pageSize };
}
