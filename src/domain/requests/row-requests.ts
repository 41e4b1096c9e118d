import { type ErrorDetail, ServiceError, badRequest, invalid, notFound } from '../errors.ts';
import { isObject } from '../json.ts';
import { repeatedIds } from '../repeated-ids.ts';
import type { TableDef } from '../table.ts';
import { type RowCreate, type RowValues, checkRowCreate, checkRowPatch, throwIfInvalid } from '../row-values.ts';

/**
 * The bodies of the bulk routes and of the cross-table batch (CONTRACT §7), parsed into typed
 * requests against their tables. The store takes only these. What needs the data (an id that
 * exists, a row that does not) is the store's to find.
 */

/** At most this many items in one bulk request or batch. */
const MAX_ITEMS = 1000;

/** A partial update of a row the body names. */
export type RowPatch = RowValues & { id: string };

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

function rejectRepeats(ids: readonly (string | undefined)[], key: string): void {
  throwIfInvalid(repeatedIds(ids, key), 'Invalid request');
}

/** POST /rows: `{id?, values, options?: {upsert?}}`. */
export function parseRowCreate(body: unknown, table: TableDef): RowCreate {
  const details: ErrorDetail[] = [];
  const input = checkRowCreate(body, table, '', details);
  throwIfInvalid(details, 'Invalid row');
  return input;
}

/** PATCH /rows/{id}: `{values}`. */
export function parseRowPatch(body: unknown, table: TableDef): RowValues {
  const details: ErrorDetail[] = [];
  const input = checkRowPatch(body, table, '', details, false);
  throwIfInvalid(details, 'Invalid row');
  return input;
}

/** POST /rows-bulk: `{data: [{id?, values, options?}], options?: {upsert?}}`; the request's upsert is each item's default. */
export function parseBulkCreate(body: unknown, table: TableDef): RowCreate[] {
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
  return inputs;
}

/** PATCH /rows-bulk: `{data: [{id, values}]}`. */
export function parseBulkUpdate(body: unknown, table: TableDef): RowPatch[] {
  const items = arrayOf(body, 'data', ['data'], 'bulk update');
  const details: ErrorDetail[] = [];
  const inputs = items.map((item, i) => checkRowPatch(item, table, `data[${i}]`, details, true));
  throwIfInvalid(details, 'Invalid bulk update');
  rejectRepeats(inputs.map((x) => x.id), 'data');
  return inputs as RowPatch[];
}

/** DELETE /rows-bulk: `{ids: [id]}`. */
export function parseBulkDelete(body: unknown): string[] {
  const ids = arrayOf(body, 'ids', ['ids'], 'bulk delete');
  const bad = ids.flatMap((id, i) => (typeof id === 'string' && id !== '' ? [] : [{ path: `ids[${i}]`, message: 'must be a row id' }]));
  throwIfInvalid(bad, 'Invalid bulk delete');
  rejectRepeats(ids as string[], 'ids');
  return ids as string[];
}

/**
 * One operation of a batch, parsed against its table; or, for one that cannot be, the error it
 * fails the batch with when its turn comes (an earlier operation's failure comes first).
 */
export type BatchOperation<T extends TableDef> =
  | { type: 'create'; index: number; table: T; tableRef: string; input: RowCreate }
  | { type: 'update'; index: number; table: T; tableRef: string; patch: RowPatch }
  | { type: 'delete'; index: number; table: T; tableRef: string; id: string }
  | { type: 'invalid'; index: number; error: ServiceError };

/**
 * An operation's error, placed by its place in the batch: its path starts `['operations', i]`
 * (its body says `operations[i]: …`) and it carries `index: i`. One placed already stands.
 */
export function atOperation(err: unknown, index: number): unknown {
  if (!(err instanceof ServiceError) || err.path[0] === 'operations') return err;
  return err.within(['operations', index], { index });
}

/** The `tableId` of every well-formed operation: the tables to look up before parsing. */
export function batchTableRefs(body: unknown): Set<string> {
  const refs = new Set<string>();
  const operations = isObject(body) && Array.isArray(body.operations) ? body.operations : [];
  for (const op of operations) if (isObject(op) && typeof op.tableId === 'string' && op.tableId !== '') refs.add(op.tableId);
  return refs;
}

/** What each well-formed operation of a batch does to which table (for the key's scopes: http/access.ts), before anything is looked up. */
export function batchOperationTables(body: unknown): { index: number; type: 'create' | 'update' | 'delete'; tableRef: string; upsert: boolean }[] {
  const operations = isObject(body) && Array.isArray(body.operations) ? body.operations : [];
  return operations.flatMap((op, index) => {
    if (!isObject(op) || typeof op.tableId !== 'string' || (op.type !== 'create' && op.type !== 'update' && op.type !== 'delete')) return [];
    const upsert = op.type === 'create' && isObject(op.options) && op.options.upsert === true;
    return [{ index, type: op.type, tableRef: op.tableId, upsert }];
  });
}

/** POST /api/rows-batch: `{operations: [{type, tableId, …}]}`, each operation against the table `tables` holds for its tableId. */
export function parseBatch<T extends TableDef>(body: unknown, tables: ReadonlyMap<string, T>): BatchOperation<T>[] {
  return arrayOf(body, 'operations', ['operations'], 'batch').map((op, index) => {
    try {
      return parseOperation(op, index, tables);
    } catch (err) {
      if (!(err instanceof ServiceError)) throw err;
      return { type: 'invalid', index, error: atOperation(err, index) as ServiceError };
    }
  });
}

function parseOperation<T extends TableDef>(op: unknown, index: number, tables: ReadonlyMap<string, T>): BatchOperation<T> {
  const where = `operations[${index}]`;
  if (!isObject(op)) throw badRequest('must be an object {type, tableId, …}');
  const { type, tableId, ...rest } = op;
  if (type !== 'create' && type !== 'update' && type !== 'delete') throw badRequest('type must be create, update or delete');
  if (typeof tableId !== 'string' || tableId === '') throw badRequest('tableId is required: a table id or code');
  const table = tables.get(tableId);
  if (!table) throw notFound(`table ${tableId} not found`);
  const details: ErrorDetail[] = [];
  if (type === 'create') {
    const input = checkRowCreate(rest, table, where, details);
    throwIfInvalid(details, 'Invalid operation');
    return { type, index, table, tableRef: tableId, input };
  }
  if (type === 'update') {
    const patch = checkRowPatch(rest, table, where, details, true) as RowPatch;
    throwIfInvalid(details, 'Invalid operation');
    return { type, index, table, tableRef: tableId, patch };
  }
  const extra = Object.keys(rest).filter((k) => k !== 'id');
  if (extra.length > 0) throw badRequest(`${extra[0]} is not a property of a delete; use type, tableId, id`);
  if (typeof rest.id !== 'string' || rest.id === '') throw badRequest('id is required: the row to delete');
  return { type, index, table, tableRef: tableId, id: rest.id };
}
