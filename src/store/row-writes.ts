import { randomUUID } from 'node:crypto';
import { ROW_ID } from '../domain/codes.ts';
import { repeatedIds } from '../domain/repeated-ids.ts';
import { type RowCreate, checkRowCreate, checkRowPatch, missingDetails, throwIfInvalid } from '../domain/row-values.ts';
import { type ErrorDetail, HttpError, badRequest, invalid, notFound } from '../errors.ts';
import { rowExists } from './database-errors.ts';
import { type Database, type Db, inTransaction } from './database.ts';
import { lockIds } from './row-locks.ts';
import type { WriteContext } from './resources/resource-spec.ts';
import type { RowRecord, RowStore } from './rows.ts';
import type { TableCatalog, TableDef } from './table-catalog.ts';
import { isObject } from '../domain/json.ts';

/** Bulk writes within one table and the cross-table batch (CONTRACT §7): each all or nothing, in one transaction. */

const MAX_ITEMS = 1000;

/** The body's one array property, checked for shape and size; other properties are refused. */
function arrayOf(body: unknown, key: string, allowed: string[], what: string): unknown[] {
  if (!isObject(body)) throw badRequest(`The body must be a JSON object {${allowed.join(', ')}}`);
  const extra = Object.keys(body).filter((k) => !allowed.includes(k));
  if (extra.length > 0) throw invalid(extra.map((k) => ({ path: k, message: `is not a known property; use ${allowed.join(', ')}` })), `Invalid ${what}`);
  const items = body[key];
  if (!Array.isArray(items)) throw invalid([{ path: key, message: 'is required and must be an array' }], `Invalid ${what}`);
  if (items.length > MAX_ITEMS) {
    throw invalid([{ path: key, message: `has ${items.length} items; at most ${MAX_ITEMS} are allowed` }], `Invalid ${what}`);
  }
  return items;
}

function rejectRepeats(ids: (string | undefined)[], key: string): void {
  throwIfInvalid(repeatedIds(ids, key), 'Invalid request');
}

/** How many operations from `start` on are plain creates in the same table (no options), to insert together. */
function createRun(ops: unknown[], start: number): number {
  const first = ops[start];
  if (!isObject(first) || first.type !== 'create' || typeof first.tableId !== 'string' || first.tableId === '') return 0;
  let n = 0;
  for (let i = start; i < ops.length; i++, n++) {
    const op = ops[i];
    if (!isObject(op) || op.type !== 'create' || op.tableId !== first.tableId || op.options !== undefined) break;
  }
  return n;
}

/** An error of one item or operation, named by its place in the request. */
function at(err: unknown, where: string, index: number, extra = false): unknown {
  if (!(err instanceof HttpError) || err.message.startsWith(where)) return err;
  return err.at(where, extra ? { index } : undefined);
}

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
  async bulkCreate(table: TableDef, body: unknown, ctx: WriteContext): Promise<{ status: number; data: RowRecord[] }> {
    const items = arrayOf(body, 'data', ['data', 'options'], 'bulk create');
    const details: ErrorDetail[] = [];
    const options = (body as Record<string, unknown>).options;
    let upsert = false;
    if (options !== undefined) {
      if (!isObject(options) || Object.keys(options).some((k) => k !== 'upsert') || (options.upsert !== undefined && typeof options.upsert !== 'boolean')) {
        details.push({ path: 'options', message: 'must be {upsert?: boolean}' });
      } else upsert = options.upsert === true;
    }
    const inputs = items.map((item, i) => checkRowCreate(item, table, `data[${i}]`, details, upsert));
    throwIfInvalid(details, 'Invalid bulk create');
    rejectRepeats(inputs.map((x) => x.id), 'data');
    if (inputs.length === 0) return { status: 201, data: [] };

    return this.transaction(async (tx) => {
      const given = inputs.map((x) => x.id).filter((id): id is string => id !== undefined);
      const existing = given.length > 0 ? await this.present(tx, table, given) : new Set<string>();
      const inserts: { index: number; input: RowCreate }[] = [];
      const result: RowRecord[] = new Array(inputs.length);
      let updated = false;
      for (const [i, input] of inputs.entries()) {
        const exists = input.id !== undefined && existing.has(input.id);
        if (exists && !input.upsert) throw rowExists(String(input.id)).at(`data[${i}]`);
        if (!exists && input.missingRequired.length > 0) throw invalid(missingDetails(input.missingRequired, `data[${i}].values`), 'Invalid bulk create');
        if (input.upsert && input.id !== undefined) {
          // As a single create with upsert: another writer may insert or delete the row meanwhile.
          const done = await this.rows.create(tx, table, input, ctx, `data[${i}].values`);
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
      );
      inserts.forEach(({ index }, k) => {
        result[index] = created[k];
      });
      return { status: updated ? 200 : 201, data: result };
    });
  }

  /** PATCH /rows-bulk: partial updates; every id must exist. */
  async bulkUpdate(table: TableDef, body: unknown, ctx: WriteContext): Promise<RowRecord[]> {
    const items = arrayOf(body, 'data', ['data'], 'bulk update');
    const details: ErrorDetail[] = [];
    const inputs = items.map((item, i) => checkRowPatch(item, table, `data[${i}]`, details, true));
    throwIfInvalid(details, 'Invalid bulk update');
    const ids = inputs.map((x) => x.id as string);
    rejectRepeats(ids, 'data');
    return this.transaction(async (tx) => {
      await this.requireAll(tx, table, ids, 'data');
      const out: RowRecord[] = [];
      for (const [i, input] of inputs.entries()) {
        const row = await this.rows.update(tx, table, ids[i], input.values, ctx);
        if (!row) throw notFound(`data[${i}]: row ${ids[i]} not found`);
        out.push(row);
      }
      return out;
    });
  }

  /** DELETE /rows-bulk: every id must exist. */
  async bulkDelete(table: TableDef, body: unknown): Promise<{ id: string }[]> {
    const ids = arrayOf(body, 'ids', ['ids'], 'bulk delete');
    const bad = ids.flatMap((id, i) => (typeof id === 'string' && id !== '' ? [] : [{ path: `ids[${i}]`, message: 'must be a row id' }]));
    throwIfInvalid(bad, 'Invalid bulk delete');
    rejectRepeats(ids as string[], 'ids');
    return this.transaction(async (tx) => {
      await this.requireAll(tx, table, ids as string[], 'ids');
      await this.rows.deleteMany(tx, table, ids as string[]);
      return (ids as string[]).map((id) => ({ id }));
    });
  }

  private async requireAll(tx: Db, table: TableDef, ids: string[], key: string): Promise<void> {
    const found = await this.present(tx, table, ids);
    const missing = ids.findIndex((id) => !found.has(id));
    if (missing >= 0) throw notFound(`${key}[${missing}]: row ${ids[missing]} not found`);
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

  /** POST /api/rows-batch: operations in array order in one transaction; later ones see earlier ones. */
  async batch(body: unknown, ctx: WriteContext): Promise<{ type: string; row: RowRecord | null }[]> {
    const operations = arrayOf(body, 'operations', ['operations'], 'batch');
    if (operations.length === 0) return [];
    return this.transaction(async (tx) => {
      const tables = new Map<string, TableDef>();
      await this.lockTargets(tx, operations, tables);
      const out: { type: string; row: RowRecord | null }[] = [];
      for (let i = 0; i < operations.length; ) {
        const run = createRun(operations, i);
        if (run > 1) {
          for (const row of await this.createMany(tx, operations, i, run, tables, ctx)) out.push({ type: 'create', row });
          i += run;
          continue;
        }
        try {
          out.push(await this.operation(tx, operations[i], `operations[${i}]`, tables, ctx));
        } catch (err) {
          throw at(err, `operations[${i}]`, i, true);
        }
        i++;
      }
      return out;
    });
  }

  /**
   * Locks up front every existing row the operations name by id, table by table and each in id
   * order, so that batches touching the same rows in different orders queue instead of deadlocking.
   * Operations that are malformed or name an unknown table are left for their turn to fail.
   */
  private async lockTargets(tx: Db, operations: unknown[], tables: Map<string, TableDef>): Promise<void> {
    if (!this.database.dialect.lockRows) return;
    const byTable = new Map<string, { table: TableDef; ids: string[] }>();
    for (const op of operations) {
      if (!isObject(op) || typeof op.tableId !== 'string' || op.tableId === '' || typeof op.id !== 'string' || op.id === '') continue;
      let table = tables.get(op.tableId);
      if (!table) {
        table = await this.catalog.find(tx, op.tableId);
        if (!table) continue;
        tables.set(op.tableId, table);
      }
      const entry = byTable.get(table.physical) ?? { table, ids: [] };
      entry.ids.push(op.id);
      byTable.set(table.physical, entry);
    }
    for (const name of [...byTable.keys()].sort()) {
      const { table, ids } = byTable.get(name) as { table: TableDef; ids: string[] };
      await this.present(tx, table, ids);
    }
  }

  /**
   * A run of plain creates in one table, as one multi-row insert. The outcome is the same as one
   * at a time: the first operation that would fail (invalid, or an id that exists or repeats) fails
   * the batch with its own index.
   */
  private async createMany(tx: Db, ops: unknown[], start: number, count: number, tables: Map<string, TableDef>, ctx: WriteContext): Promise<RowRecord[]> {
    const tableId = (ops[start] as { tableId: string }).tableId;
    const failAt = (k: number, err: unknown) => at(err, `operations[${start + k}]`, start + k, true);
    let table: TableDef;
    try {
      table = await this.tableFor(tx, tableId, tables);
    } catch (err) {
      throw failAt(0, err);
    }
    const inputs: RowCreate[] = [];
    let invalidAt: { k: number; err: unknown } | null = null;
    for (let k = 0; k < count && !invalidAt; k++) {
      const details: ErrorDetail[] = [];
      const { type: _type, tableId: _table, ...rest } = ops[start + k] as Record<string, unknown>;
      inputs.push(checkRowCreate(rest, table, `operations[${start + k}]`, details));
      if (details.length > 0) invalidAt = { k, err: invalid(details, 'Invalid operation') };
    }
    const valid = invalidAt ? inputs.slice(0, invalidAt.k) : inputs;
    const given = valid.map((x) => x.id).filter((id): id is string => id !== undefined);
    const existing = given.length > 0 ? await this.rows.existing(tx, table, given) : new Set<string>();
    const seen = new Set<string>();
    for (const [k, input] of valid.entries()) {
      if (input.id === undefined) continue;
      if (existing.has(input.id) || seen.has(input.id)) {
        throw failAt(k, rowExists(input.id));
      }
      seen.add(input.id);
    }
    if (invalidAt) throw failAt(invalidAt.k, invalidAt.err);
    try {
      return await this.rows.insertMany(tx, table, inputs.map((x) => ({ id: x.id ?? randomUUID(), values: x.values })), ctx);
    } catch (err) {
      // Another writer inserted one of these ids meanwhile; the run's first operation answers for it.
      throw failAt(0, err);
    }
  }

  private async tableFor(tx: Db, tableId: string, tables: Map<string, TableDef>): Promise<TableDef> {
    let table = tables.get(tableId);
    if (!table) {
      table = await this.catalog.find(tx, tableId);
      if (!table) throw notFound(`table ${tableId} not found`);
      tables.set(tableId, table);
    }
    return table;
  }

  private async operation(tx: Db, op: unknown, where: string, tables: Map<string, TableDef>, ctx: WriteContext) {
    if (!isObject(op)) throw badRequest('must be an object {type, tableId, …}');
    const { type, tableId, ...rest } = op;
    if (type !== 'create' && type !== 'update' && type !== 'delete') throw badRequest('type must be create, update or delete');
    if (typeof tableId !== 'string' || tableId === '') throw badRequest('tableId is required: a table id or code');
    const table = await this.tableFor(tx, tableId, tables);
    const details: ErrorDetail[] = [];
    if (type === 'create') {
      const input = checkRowCreate(rest, table, where, details);
      throwIfInvalid(details, 'Invalid operation');
      return { type, row: (await this.rows.create(tx, table, input, ctx, `${where}.values`)).row };
    }
    if (type === 'update') {
      const input = checkRowPatch(rest, table, where, details, true);
      throwIfInvalid(details, 'Invalid operation');
      const row = await this.rows.update(tx, table, input.id as string, input.values, ctx);
      if (!row) throw notFound(`row ${input.id} not found in table ${tableId}`);
      return { type, row };
    }
    const extra = Object.keys(rest).filter((k) => k !== 'id');
    if (extra.length > 0) throw badRequest(`${extra[0]} is not a property of a delete; use type, tableId, id`);
    if (typeof rest.id !== 'string' || rest.id === '') throw badRequest('id is required: the row to delete');
    if (!(await this.rows.delete(tx, table, rest.id))) throw notFound(`row ${rest.id} not found in table ${tableId}`);
    return { type, row: null };
  }
}
