import { randomUUID } from 'node:crypto';
import { ROW_ID } from '../domain/codes.ts';
import { type BatchOperation, type RowPatch, atOperation } from '../domain/requests/row-requests.ts';
import { type RowCreate, missingDetails } from '../domain/row-values.ts';
import { ServiceError, invalid, notFound } from '../domain/errors.ts';
import { rowExists } from './database-errors.ts';
import { type Database, type Db, inTransaction } from './database.ts';
import { lockIds } from './row-locks.ts';
import type { WriteContext } from './resources/resource-spec.ts';
import type { RowStore } from './rows.ts';
import type { TableCatalog } from './table-catalog.ts';
import type { TableDef } from '../domain/table.ts';
import type { RawRow } from '../domain/row.ts';

/** Bulk writes within one table and the cross-table batch (CONTRACT §7): each all or nothing, in one transaction. */

export class RowWriter {
  constructor(
    private readonly database: Database,
    private readonly catalog: TableCatalog,
    private readonly rows: RowStore,
  ) {}

  private transaction<T>(work: (tx: Db) => Promise<T>): Promise<T> {
    return inTransaction(this.database, work);
  }

  /** POST /rows-bulk: creates, or with upsert updates the rows whose id exists. */
  async bulkCreate(table: TableDef, inputs: RowCreate[], ctx: WriteContext): Promise<{ status: number; data: RawRow[] }> {
    if (inputs.length === 0) return { status: 201, data: [] };
    if (inputs.every((x) => !x.upsert)) {
      // Only creates: the primary key finds an id that exists, without reading first. Rows go in
      // in order, so the first that exists fails the request, named by its index.
      const items = inputs.map((x) => ({ id: x.id ?? randomUUID(), values: x.values }));
      const at = (k: number, err: ServiceError) => err.within(['data', k]);
      return { status: 201, data: await this.transaction((tx) => this.rows.insertMany(tx, table, items, ctx, at)) };
    }

    return this.transaction(async (tx) => {
      const given = inputs.map((x) => x.id).filter((id): id is string => id !== undefined);
      const existing = given.length > 0 ? await this.present(tx, table, given) : new Set<string>();
      const inserts: { index: number; input: RowCreate }[] = [];
      const result: RawRow[] = new Array(inputs.length);
      let updated = false;
      for (const [i, input] of inputs.entries()) {
        const exists = input.id !== undefined && existing.has(input.id);
        if (exists && !input.upsert) throw rowExists(String(input.id)).within(['data', i]);
        if (!exists && input.missingRequired.length > 0) throw invalid(missingDetails(input.missingRequired, `data[${i}].values`), 'Invalid bulk create');
        if (input.upsert && input.id !== undefined) {
          // As a single create with upsert: another writer may insert or delete the row meanwhile.
          const done = await this.rows.create(tx, table, input, ctx, `data[${i}].values`).catch((err) => {
            // One placed already (within the item) stands.
            throw err instanceof ServiceError && err.path.length === 0 ? err.within(['data', i]) : err;
          });
          result[i] = done.row;
          updated ||= !done.created;
        } else {
          inserts.push({ index: i, input });
        }
      }
      const created = await this.rows.insertMany(
        tx,
        table,
        inserts.map(({ input }) => ({ id: input.id ?? randomUUID(), values: input.values })),
        ctx,
        (k, err) => err.within(['data', inserts[k].index]),
      );
      inserts.forEach(({ index }, k) => {
        result[index] = created[k];
      });
      return { status: updated ? 200 : 201, data: result };
    });
  }

  /** PATCH /rows-bulk: partial updates; every id must exist. */
  async bulkUpdate(table: TableDef, inputs: RowPatch[], ctx: WriteContext): Promise<RawRow[]> {
    const ids = inputs.map((x) => x.id);
    return this.transaction(async (tx) => {
      await this.requireAll(tx, table, ids, 'data');
      const out: RawRow[] = [];
      for (const [i, input] of inputs.entries()) {
        const row = await this.rows.update(tx, table, ids[i], input.values, ctx).catch((err) => {
          throw err instanceof ServiceError ? err.within(['data', i]) : err;
        });
        if (!row) throw notFound(`row ${ids[i]} not found`).within(['data', i]);
        out.push(row);
      }
      return out;
    });
  }

  /** DELETE /rows-bulk: every id must exist. */
  async bulkDelete(table: TableDef, ids: string[], ctx: WriteContext): Promise<{ id: string }[]> {
    return this.transaction(async (tx) => {
      await this.requireAll(tx, table, ids, 'ids');
      await this.rows.deleteMany(tx, table, ids, ctx);
      return ids.map((id) => ({ id }));
    });
  }

  private async requireAll(tx: Db, table: TableDef, ids: string[], key: string): Promise<void> {
    const found = await this.present(tx, table, ids);
    const missing = ids.findIndex((id) => !found.has(id));
    if (missing >= 0) throw notFound(`row ${ids[missing]} not found`).within([key, missing]);
  }

  /**
   * The ids among `ids` that exist. On PostgreSQL (SQLite runs one transaction at a time) they are
   * also locked until the transaction ends, in id order: a concurrent delete cannot take a row away
   * between this check and the write (a row it has just removed is reported missing), and writers
   * that lock this way never wait for each other in a cycle.
   */
  private async present(tx: Db, table: TableDef, ids: string[]): Promise<Set<string>> {
    if (!this.database.dialect.lockRows) return this.rows.existing(tx, table, ids);
    return lockIds(tx, table.physical, ids.filter((id) => ROW_ID.test(id)));
  }

  /**
   * The tables a batch names, looked up before it is parsed against them (unknown ones are left
   * out); `fresh`: as the database holds them now, past the memo (TableCatalog.findFresh).
   */
  async batchTables(refs: Iterable<string>, fresh = false): Promise<Map<string, TableDef>> {
    const tables = new Map<string, TableDef>();
    for (const ref of refs) {
      const table = await (fresh ? this.catalog.findFresh(this.database.db, ref) : this.catalog.find(this.database.db, ref));
      if (table) tables.set(ref, table);
    }
    return tables;
  }

  /** POST /api/rows-batch: operations in array order in one transaction; later ones see earlier ones. */
  async batch(operations: BatchOperation<TableDef>[], ctx: WriteContext): Promise<BatchResult[]> {
    if (operations.length === 0) return [];
    return this.transaction(async (tx) => {
      await this.lockTargets(tx, operations);
      const out: BatchResult[] = [];
      for (let i = 0; i < operations.length; ) {
        const run = createRun(operations, i);
        if (run.length > 1) {
          for (const row of await this.createMany(tx, run, ctx)) out.push({ type: 'create', table: run[0].table, row });
          i += run.length;
          continue;
        }
        try {
          out.push(await this.operation(tx, operations[i], ctx));
        } catch (err) {
          throw atOperation(err, i);
        }
        i++;
      }
      return out;
    });
  }

  /**
   * Locks up front every existing row the operations name by id, table by table and each in id
   * order, so that batches touching the same rows in different orders queue instead of deadlocking.
   */
  private async lockTargets(tx: Db, operations: BatchOperation<TableDef>[]): Promise<void> {
    if (!this.database.dialect.lockRows) return;
    const byTable = new Map<string, { table: TableDef; ids: string[] }>();
    for (const op of operations) {
      const id = op.type === 'create' ? op.input.id : op.type === 'update' ? op.patch.id : op.type === 'delete' ? op.id : undefined;
      if (op.type === 'invalid' || id === undefined) continue;
      const entry = byTable.get(op.table.physical) ?? { table: op.table, ids: [] };
      entry.ids.push(id);
      byTable.set(op.table.physical, entry);
    }
    for (const name of [...byTable.keys()].sort()) {
      const { table, ids } = byTable.get(name) as { table: TableDef; ids: string[] };
      await this.present(tx, table, ids);
    }
  }

  /**
   * A run of plain creates in one table, as one multi-row insert. The outcome is the same as one
   * at a time: the first operation whose id exists or repeats fails the batch with its own index.
   */
  private async createMany(tx: Db, run: CreateOperation[], ctx: WriteContext): Promise<RawRow[]> {
    const { table } = run[0];
    // An id repeated within the run would fail on its second insert; named before anything is written.
    const seen = new Set<string>();
    for (const { index, input } of run) {
      if (input.id === undefined) continue;
      if (seen.has(input.id)) throw atOperation(rowExists(input.id), index);
      seen.add(input.id);
    }
    const items = run.map(({ input }) => ({ id: input.id ?? randomUUID(), values: input.values }));
    try {
      // The first id that exists fails its insert, named by its operation's index.
      return await this.rows.insertMany(tx, table, items, ctx, (k, err) => atOperation(err, run[k].index));
    } catch (err) {
      // An error already placed within its operation stands (atOperation); anything else the run's first operation answers for.
      throw atOperation(err, run[0].index);
    }
  }

  private async operation(tx: Db, op: BatchOperation<TableDef>, ctx: WriteContext): Promise<BatchResult> {
    const where = `operations[${op.index}]`;
    switch (op.type) {
      case 'invalid':
        throw op.error;
      case 'create':
        return { type: op.type, table: op.table, row: (await this.rows.create(tx, op.table, op.input, ctx, `${where}.values`)).row };
      case 'update': {
        const row = await this.rows.update(tx, op.table, op.patch.id, op.patch.values, ctx);
        if (!row) throw notFound(`row ${op.patch.id} not found in table ${op.tableRef}`);
        return { type: op.type, table: op.table, row };
      }
      case 'delete':
        if (!(await this.rows.delete(tx, op.table, op.id, ctx))) throw notFound(`row ${op.id} not found in table ${op.tableRef}`);
        return { type: op.type, table: op.table, row: null };
    }
  }
}

/** What one operation of a batch did: the row after it (null for a delete), of its table. */
export interface BatchResult {
  type: 'create' | 'update' | 'delete';
  table: TableDef;
  row: RawRow | null;
}

type CreateOperation = Extract<BatchOperation<TableDef>, { type: 'create' }>;

/** The plain creates (no upsert) in the same table from `start` on, to insert together. */
function createRun(operations: BatchOperation<TableDef>[], start: number): CreateOperation[] {
  const run: CreateOperation[] = [];
  for (let i = start; i < operations.length; i++) {
    const op = operations[i];
    if (op.type !== 'create' || op.input.upsert || (run.length > 0 && op.table !== run[0].table)) break;
    run.push(op);
  }
  return run;
}
