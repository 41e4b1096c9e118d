import { ServiceError, notFound } from '../domain/errors.ts';
import type { RawRow } from '../domain/row.ts';
import type { TableDef } from '../domain/table.ts';
import type { BatchPlan, RowReadPlan, RowWritePlanOf, TxMode } from '../plan/row-plans.ts';
import type { AggregatePlan } from '../plan/aggregate-plan.ts';
import { type AggregatePage, aggregatePage } from './aggregate-sql.ts';
import { type Database, type Db, inTransaction } from './database.ts';
import type { WriteContext } from './resources/resource-spec.ts';
import type { BatchResult, RowWriter } from './row-writes.ts';
import type { Page, RowStore } from './rows.ts';
import { classifyDatabaseError } from './database-errors.ts';
import { NotKeptByWrite, inHeldScope } from './transaction-hooks.ts';
import type { TableCatalog } from './table-catalog.ts';

/**
 * The execute stage: runs plans (plan/row-plans.ts) against the database, in the transaction their
 * txMode asks for, and runs a request again when its table's fields changed under it.
 */

export interface ExecuteDeps {
  database: Database;
  catalog: TableCatalog;
  rows: RowStore;
}

/** Runs of a request whose table's fields changed under it, before its 409 goes out. */
const SCHEMA_RUNS = 3;

/**
 * Whether a request failed because the table's fields changed while it ran: a column its
 * statements name was dropped (the database refuses the statement, so nothing of it was written).
 */
function schemaChanged(deps: ExecuteDeps, err: unknown): boolean {
  return err instanceof ServiceError ? err.code === 'schema_changed' : classifyDatabaseError(err, deps.database.dialect) === 'schema_changed';
}

/**
 * Runs a rows request planned against its tables' definitions. A field removed by a PUT committed
 * meanwhile makes the database refuse the statements of the old definition, whichever fields the
 * request names: `work` is then run again with `fresh` true, to plan against the definitions as
 * the database holds them now (a write naming the removed field then answers 400 like any unknown
 * field). Only a table changing again and again answers the 409 schema_changed.
 */
export async function rerunOnSchemaChange<T>(deps: ExecuteDeps, work: (fresh: boolean) => Promise<T>): Promise<T> {
  for (let run = 1; ; run++) {
    try {
      return await work(run > 1);
    } catch (err) {
      if (run >= SCHEMA_RUNS || !schemaChanged(deps, err)) throw err;
    }
  }
}

/** rerunOnSchemaChange for a request on one table, named by id or code (a 404 when there is none). */
export function withTable<T>(deps: ExecuteDeps, ref: string, work: (table: TableDef) => Promise<T>): Promise<T> {
  return rerunOnSchemaChange(deps, async (fresh) => {
    const table = fresh ? await deps.catalog.findFresh(deps.database.db, ref) : await tableOr404(deps, ref);
    if (!table) throw notFound(`table ${ref} not found`);
    return work(table);
  });
}

/** The table a rows route names by id or code, or a 404. */
export async function tableOr404(deps: ExecuteDeps, ref: string): Promise<TableDef> {
  const table = await deps.catalog.find(deps.database.db, ref);
  if (!table) throw notFound(`table ${ref} not found`);
  return table;
}

/**
 * A single-row write: in a transaction of its own where its plan says so, else as one statement;
 * in a transaction within a request's held one (an Idempotency-Key's answer commits with it); a
 * create that keeps the request's answer itself (ctx.keptAnswer) in its one statement, and no write
 * that needs a transaction in such a request (NotKeptByWrite, before anything is written).
 */
function singleWrite<T>(deps: ExecuteDeps, txMode: TxMode, ctx: WriteContext, work: (db: Db) => Promise<T>): Promise<T> {
  if (ctx.keptAnswer) return txMode === 'statement' ? work(deps.database.db) : Promise.reject(new NotKeptByWrite('a write in a transaction'));
  return txMode === 'statement' && !inHeldScope() ? work(deps.database.db) : inTransaction(deps.database, work);
}

const rowNotFound = (id: string, tableRef: string) => notFound(`row ${id} not found in table ${tableRef}`);

// ---- reads ----

export function readPage(deps: ExecuteDeps, plan: RowReadPlan): Promise<Page> {
  const { filter, keys } = plan.selection;
  return deps.rows.page(deps.database.db, plan.table, { filter, keys, after: plan.after, limit: plan.limit, text: plan.shapeKey });
}

/** A page of groups (GET /rows-aggregate): one statement, outside any transaction. */
export function readAggregate(deps: ExecuteDeps, plan: AggregatePlan): Promise<AggregatePage> {
  return aggregatePage(deps.database.db, deps.database.dialect, plan);
}

/** One row by id: too simple to plan (a plan object would cost the hot path an allocation). */
export function readRow(deps: ExecuteDeps, table: TableDef, id: string): Promise<RawRow | undefined> {
  return deps.rows.get(deps.database.db, table, id);
}

// ---- single-row writes ----

export function createRow(deps: ExecuteDeps, plan: RowWritePlanOf<'row-create'>, ctx: WriteContext): Promise<{ created: boolean; row: RawRow }> {
  return singleWrite(deps, plan.txMode, ctx, (db) => deps.rows.create(db, plan.table, plan.input, ctx));
}

export function updateRow(deps: ExecuteDeps, plan: RowWritePlanOf<'row-update'>, ctx: WriteContext): Promise<RawRow> {
  return singleWrite(deps, plan.txMode, ctx, async (db) => {
    const updated = await deps.rows.update(db, plan.table, plan.id, plan.input.values, ctx);
    if (!updated) throw rowNotFound(plan.id, plan.tableRef);
    return updated;
  });
}

export function deleteRow(deps: ExecuteDeps, plan: RowWritePlanOf<'row-delete'>, ctx: WriteContext): Promise<void> {
  return singleWrite(deps, plan.txMode, ctx, async (db) => {
    if (!(await deps.rows.delete(db, plan.table, plan.id, ctx))) throw rowNotFound(plan.id, plan.tableRef);
  });
}

// ---- bulk writes and the batch (RowWriter opens their one transaction) ----

export function bulkCreate(writer: RowWriter, plan: RowWritePlanOf<'bulk-create'>, ctx: WriteContext): Promise<{ status: number; data: RawRow[] }> {
  return writer.bulkCreate(plan.table, plan.operations, ctx);
}

export function bulkUpdate(writer: RowWriter, plan: RowWritePlanOf<'bulk-update'>, ctx: WriteContext): Promise<RawRow[]> {
  return writer.bulkUpdate(plan.table, plan.operations, ctx);
}

export function bulkDelete(writer: RowWriter, plan: RowWritePlanOf<'bulk-delete'>, ctx: WriteContext): Promise<{ id: string }[]> {
  return writer.bulkDelete(plan.table, plan.operations, ctx);
}

export function runBatch(writer: RowWriter, plan: BatchPlan, ctx: WriteContext): Promise<BatchResult[]> {
  return writer.batch(plan.operations, ctx);
}
