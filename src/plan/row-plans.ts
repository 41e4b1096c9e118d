import type { CursorValue } from '../domain/cursor.ts';
import type { RowSelection } from '../domain/requests/row-list-query.ts';
import type { BatchOperation, RowPatch } from '../domain/requests/row-requests.ts';
import type { RowCreate, RowValues } from '../domain/row-values.ts';
import type { TableDef } from '../domain/table.ts';
import type { FieldDef } from '../domain/field-types/field-type.ts';

/**
 * Plans: what a parsed request (domain/requests/) asks of the store, as plain data; the second
 * stage of request → plan → execute (store/execute.ts) → render (render/). Each is one small
 * object made once per request. A new kind of request (an aggregate, a link expansion, a stream)
 * is a new plan kind here and a function that runs it in store/execute.ts.
 */

/**
 * How a write runs: as one statement on the shared connection, or in a transaction of its own
 * (a write in steps, or one whose table's files must change with its row).
 */
export type TxMode = 'statement' | 'transaction';

/** A page of one table's rows, in keyset order (GET /rows). */
export interface RowReadPlan {
  kind: 'row-read';
  table: TableDef;
  selection: RowSelection;
  /** The filter and sort as the request wrote them: the page's statement is cached by this key. */
  shapeKey: string;
  /** The sort values the page starts after (the cursor's), or null for the first page. */
  after: CursorValue[] | null;
  limit: number;
  /** The link fields whose linked rows the answer carries (`expand`). */
  expand: FieldDef[];
}

/** Writes to one table's rows. `tableRef` is the table as the request named it (id or code), for messages. */
export type RowWritePlan =
  | { kind: 'row-create'; table: TableDef; tableRef: string; input: RowCreate; txMode: TxMode }
  | { kind: 'row-update'; table: TableDef; tableRef: string; id: string; input: RowValues; txMode: TxMode }
  | { kind: 'row-delete'; table: TableDef; tableRef: string; id: string; txMode: TxMode }
  | { kind: 'bulk-create'; table: TableDef; operations: RowCreate[]; txMode: 'transaction' }
  | { kind: 'bulk-update'; table: TableDef; operations: RowPatch[]; txMode: 'transaction' }
  | { kind: 'bulk-delete'; table: TableDef; operations: string[]; txMode: 'transaction' };

/** A cross-table batch: every operation in one transaction, in order. */
export interface BatchPlan {
  kind: 'batch';
  operations: BatchOperation<TableDef>[];
  txMode: 'transaction';
}

export type RowWritePlanOf<K extends RowWritePlan['kind']> = Extract<RowWritePlan, { kind: K }>;

/** What the store tells the planner about how a write can run. */
export interface WriteModes {
  /** Whether writes to the table need a transaction whatever they are (its files change with its rows). */
  needsTransaction(table: TableDef): boolean;
  /** Whether a create is one statement (an upsert in steps reads, then writes). */
  createIsOneStatement(input: RowCreate): boolean;
}

/** GET /rows: the page the list request asks for. */
export function planRowRead(table: TableDef, selection: RowSelection, after: CursorValue[] | null, limit: number, expand: FieldDef[] = []): RowReadPlan {
  // Filter and sort texts as given: two requests written alike share one prepared statement.
  const shapeKey = JSON.stringify([selection.filterText ?? null, selection.sortText ?? null]);
  return { kind: 'row-read', table, selection, shapeKey, after, limit, expand };
}

const singleMode = (modes: WriteModes, table: TableDef, oneStatement: boolean): TxMode =>
  oneStatement && !modes.needsTransaction(table) ? 'statement' : 'transaction';

/** POST /rows. An upsert in steps reads, then writes: one transaction, so no other writer comes between. */
export function planRowCreate(table: TableDef, tableRef: string, input: RowCreate, modes: WriteModes): RowWritePlanOf<'row-create'> {
  return { kind: 'row-create', table, tableRef, input, txMode: singleMode(modes, table, modes.createIsOneStatement(input)) };
}

/** PATCH /rows/{id}. */
export function planRowUpdate(table: TableDef, tableRef: string, id: string, input: RowValues, modes: WriteModes): RowWritePlanOf<'row-update'> {
  return { kind: 'row-update', table, tableRef, id, input, txMode: singleMode(modes, table, true) };
}

/** DELETE /rows/{id}. */
export function planRowDelete(table: TableDef, tableRef: string, id: string, modes: WriteModes): RowWritePlanOf<'row-delete'> {
  return { kind: 'row-delete', table, tableRef, id, txMode: singleMode(modes, table, true) };
}

/** The bulk routes (POST, PATCH, DELETE /rows-bulk): all or nothing, in one transaction. */
export function planBulk<K extends 'bulk-create' | 'bulk-update' | 'bulk-delete'>(kind: K, table: TableDef, operations: RowWritePlanOf<K>['operations']): RowWritePlanOf<K> {
  return { kind, table, operations, txMode: 'transaction' } as RowWritePlanOf<K>;
}

/** POST /rows-batch. */
export function planBatch(operations: BatchOperation<TableDef>[]): BatchPlan {
  return { kind: 'batch', operations, txMode: 'transaction' };
}
