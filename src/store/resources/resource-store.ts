import { randomUUID } from 'node:crypto';
import { type Expression, type ExpressionBuilder, type RawBuilder, type SqlBool, sql } from 'kysely';
import { ALL, type Grant, type Scope, refusal } from '../../domain/access.ts';
import { isObject } from '../../domain/json.ts';
import { normaliseDateTime } from '../../domain/dates.ts';
import { repeatedIds } from '../../domain/repeated-ids.ts';
import type { ResourceInput } from '../../domain/requests/resource-bodies.ts';
import {
  type AttrType,
  type QueryableAttrs,
  type ResourceFilter,
  type ResourceListQuery,
} from '../../domain/resource-query.ts';
import { type ServiceError, invalid, notFound } from '../../domain/errors.ts';
import { type Database, type Db, inTransaction } from '../database.ts';
import { toServiceError } from '../database-errors.ts';
import type { Dialect } from '../dialect.ts';
import type { MetaDb } from '../meta-schema.ts';
import { lockIds } from '../row-locks.ts';
import { namedTableRefusal } from './table-names.ts';
import { type AttrSpec, type Attrs, type Item, type ResourceSpec, SYSTEM_ATTRS, type WriteContext } from './resource-spec.ts';

const OPERATORS = {
  eq: '=', neq: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=', in: 'in', notIn: 'not in',
} as const;

/**
 * A resource's own table is queried untyped (`Db`, and filters through this): its columns are the
 * spec's attrs, known only at run time and checked against the spec rather than by the compiler.
 * Everything else, the hooks included, goes through the metadata types (`MetaDb`).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type OwnTableExpressions = ExpressionBuilder<any, any>;

/**
 * The one implementation of the generic resource API (CONTRACT §9) over a metadata table:
 * list with paging, filter, sorting and relations; get; create; partial update; delete; each
 * write of several items in one transaction.
 */
export class ResourceStore {
  readonly queryable: QueryableAttrs;
  private readonly columns: string[];

  constructor(
    readonly spec: ResourceSpec,
    private readonly database: Database,
  ) {
    const visible = Object.entries(spec.attrs).filter(([, a]) => !a.hidden && !a.virtual);
    this.queryable = {
      types: { ...SYSTEM_ATTRS, ...Object.fromEntries(visible.map(([name, a]) => [name, a.type])) },
      relations: Object.keys(spec.relations),
    };
    this.columns = [...Object.keys(SYSTEM_ATTRS), ...visible.map(([name]) => name)];
  }

  private get dialect(): Dialect {
    return this.database.dialect;
  }

  // ---- reading ----

  /** A page of items; `tables`: only the items of these tables, and of none (a key limited to them, CONTRACT §12; the spec's `tableRef`). */
  async list(q: ResourceListQuery, tables?: readonly string[]): Promise<{ items: Item[]; nextOffset: number | null }> {
    const { db } = this.database;
    let query = db.selectFrom(this.spec.table).select(this.columns);
    if (tables) query = query.where(this.ofTables(tables));
    if (q.filter) {
      const filter = q.filter;
      query = query.where((eb) => this.compileFilter(eb, filter));
    }
    // Null sorts after every value, as PostgreSQL does by default and SQLite does not: the same order on both.
    for (const s of q.sorting) query = query.orderBy(s.attr, (ob) => (s.direction === 'asc' ? ob.asc().nullsLast() : ob.desc().nullsFirst()));
    if (!q.sorting.some((s) => s.attr === 'id')) query = query.orderBy('id', 'asc');
    // One row more than asked tells whether another page follows.
    const rows = await query.limit(q.limit + 1).offset(q.offset).execute();
    const more = rows.length > q.limit;
    const items = rows.slice(0, q.limit).map((r) => this.decode(r));
    await this.complete(db, items, q.relations);
    return { items, nextOffset: more ? q.offset + q.limit : null };
  }

  /** Whether an item belongs to one of `tables`, or to none: SQL over the spec's `tableRef`. */
  private ofTables(tables: readonly string[]): RawBuilder<SqlBool> {
    const ref = this.spec.tableRef;
    if (!ref) throw new Error(`${this.spec.name} names no table (tableRef): it cannot be limited to some`);
    if (ref.list) return this.dialect.jsonListWithin(ref.column, tables);
    const table = ref.path ? this.dialect.jsonTextAt(ref.column, ref.path) : sql.ref(ref.column);
    const among = tables.length === 0 ? sql`1 = 0` : sql`${table} in (${sql.join([...tables])})`;
    return sql<SqlBool>`(${table} is null or ${among})`;
  }

  /** The ids of the tables an item belongs to (the spec's `tableRef`; "*": every table); none when it names none. */
  tablesOf(item: Item): string[] {
    const ref = this.spec.tableRef;
    if (!ref) return [];
    let v: unknown = item[ref.column];
    for (const key of ref.path ?? []) v = isObject(v) ? v[key] : undefined;
    const ids = ref.list && Array.isArray(v) ? v : [v];
    return ids.filter((id): id is string => typeof id === 'string');
  }

  /** The 403 of a key that may not use `scope` on the item's tables (CONTRACT §12), naming the first it lacks; null when it may, or the item names none. */
  async tableRefusal(item: Item, grant: Grant, scope: Scope): Promise<ServiceError | null> {
    for (const id of this.tablesOf(item)) {
      const refused = id === ALL ? refusal(grant, [{ scopes: [scope], everyTable: true }]) : await namedTableRefusal(this.database.db, grant, scope, id);
      if (refused) return refused;
    }
    return null;
  }

  /** The id a URL reference names: the reference itself, or what the resource resolves it to. */
  async resolveId(ref: string): Promise<string> {
    const resolve = this.spec.hooks?.resolveId;
    // No id or code holds a NUL, and PostgreSQL would fail on one rather than find nothing.
    const id = ref.includes('\u0000') ? undefined : resolve ? await resolve(this.database.db, ref) : ref;
    if (id === undefined) throw notFound(`${this.spec.label} ${ref} not found`);
    return id;
  }

  async get(id: string, relations: string[] = []): Promise<Item> {
    const { db } = this.database;
    const item = await this.find(db, id);
    if (!item) throw notFound(`${this.spec.label} ${id} not found`);
    await this.complete(db, [item], relations);
    return item;
  }

  private async find(db: Db, id: string): Promise<Item | undefined> {
    if (id.includes('\u0000')) return undefined; // never stored; PostgreSQL would fail on it
    const row = await db.selectFrom(this.spec.table).select(this.columns).where('id', '=', id).executeTakeFirst();
    return row && this.decode(row);
  }

  /** What items need beyond their row: the resource's own additions and requested relations. */
  private async complete(db: MetaDb, items: Item[], relations: string[]): Promise<void> {
    if (items.length === 0) return;
    await this.spec.hooks?.decorate?.(db, items);
    for (const name of relations) {
      const attr = this.spec.relations[name];
      const ids = [...new Set(items.map((i) => i[attr]).filter((v): v is string => typeof v === 'string'))];
      const members = ids.length === 0 ? [] : await db.selectFrom('rh_members').selectAll().where('id', 'in', ids).execute();
      const byId = new Map(members.map((m) => [m.id, m]));
      for (const item of items) {
        const id = item[attr];
        item[name] = (typeof id === 'string' && byId.get(id)) || null;
      }
    }
  }

  private compileFilter(eb: OwnTableExpressions, f: ResourceFilter): Expression<SqlBool> {
    if (f.kind !== 'cmp') {
      const parts = f.items.map((i) => this.compileFilter(eb, i));
      return f.kind === 'and' ? eb.and(parts) : eb.or(parts);
    }
    const type = this.queryable.types[f.attr];
    const ref = eb.ref(f.attr);
    const value = (v: unknown) => (type === 'boolean' ? this.dialect.encodeBoolean(v as boolean) : v);
    switch (f.op) {
      case 'is':
      case 'isNot': {
        const positive = f.value === null ? eb(ref, 'is', null) : eb(ref, '=', value(f.value));
        return f.op === 'is' ? positive : f.value === null ? eb(ref, 'is not', null) : eb.or([eb.not(positive), eb(ref, 'is', null)]);
      }
      case 'like':
      case 'notLike':
      case 'iLike': {
        // A backslash escapes %, _ and itself: PostgreSQL's default, which SQLite has only when told.
        const lower = this.dialect.lower;
        const [left, right] = f.op === 'iLike' ? [lower(sql.ref(f.attr)), lower(sql`${f.value}`)] : [ref, eb.val(f.value)];
        return sql<SqlBool>`${left} ${sql.raw(f.op === 'notLike' ? 'not like' : 'like')} ${right} escape '\\'`;
      }
      case 'in':
      case 'notIn':
        return eb(ref, OPERATORS[f.op], (f.value as unknown[]).map(value));
      default:
        return eb(ref, OPERATORS[f.op], value(f.value));
    }
  }

  // ---- writing ----

  async create(inputs: ResourceInput[], ctx: WriteContext): Promise<Item[]> {
    return this.write(inputs.length > 1, [], inputs, async (tx, input) => {
      const columns: Item = { id: randomUUID(), createdAt: ctx.now, updatedAt: ctx.now, createdBy: ctx.memberId, updatedBy: ctx.memberId };
      for (const [name, attr] of Object.entries(this.spec.attrs)) {
        if (attr.virtual) continue;
        const v = name in input ? input[name] : attr.default?.();
        if (v !== undefined) columns[name] = this.encode(attr, v);
      }
      const answerOnce = await this.spec.hooks?.beforeInsert?.(tx, columns, input, ctx);
      await tx.insertInto(this.spec.table).values(columns).execute();
      const item = (await this.find(tx, columns.id)) as Item;
      await this.spec.hooks?.afterInsert?.(tx, item, input, ctx);
      return answerOnce ? Object.assign(item, answerOnce) : item;
    });
  }

  async update(inputs: ResourceInput[], ctx: WriteContext): Promise<Item[]> {
    this.rejectRepeatedIds(inputs.map((i) => i.id as string));
    return this.write(inputs.length > 1, inputs.map((i) => i.id as string), inputs, async (tx, input) => {
      const id = input.id as string;
      const before = await this.find(tx, id);
      if (!before) throw notFound(`${this.spec.label} ${id} not found`);
      const changes: Attrs = { updatedAt: ctx.now, updatedBy: ctx.memberId };
      for (const [name, attr] of Object.entries(this.spec.attrs)) {
        if (!attr.virtual && name in input) changes[name] = this.encode(attr, input[name]);
      }
      await this.spec.hooks?.beforeUpdate?.(tx, before, changes, input, ctx);
      await tx.updateTable(this.spec.table).set(changes).where('id', '=', id).execute();
      const item = (await this.find(tx, id)) as Item;
      await this.spec.hooks?.afterUpdate?.(tx, item, input, ctx);
      return item;
    });
  }

  async remove(ids: string[], ctx: WriteContext): Promise<Item[]> {
    this.rejectRepeatedIds(ids);
    return this.write(ids.length > 1, ids, ids, async (tx, id) => {
      const item = await this.find(tx, id);
      if (!item) throw notFound(`${this.spec.label} ${id} not found`);
      await this.complete(tx, [item], []);
      await this.spec.hooks?.beforeDelete?.(tx, item, ctx);
      await tx.deleteFrom(this.spec.table).where('id', '=', id).execute();
      await this.spec.hooks?.afterDelete?.(tx, item, ctx);
      return item;
    }, false);
  }

  /**
   * Runs one step per input in one transaction; a failing step names its index and undoes all.
   * The items are completed (decorated) at the end, unless the steps did it themselves (a delete
   * must, before its item is gone).
   */
  private async write<T>(
    many: boolean,
    ids: string[],
    inputs: T[],
    step: (tx: Db, input: T) => Promise<Item>,
    completeAfter = true,
  ): Promise<Item[]> {
    return inTransaction(this.database, async (tx) => {
      // The items written are locked first, in id order: writers that name the same items in
      // other orders queue instead of deadlocking (PostgreSQL; SQLite writes one at a time).
      if (this.dialect.lockRows && ids.length > 1) {
        // An id holding U+0000 names nothing (and PostgreSQL would fail on it): its step answers 404.
        await lockIds(tx, this.spec.table, ids.filter((id) => !id.includes('\u0000')));
      }
      const items: Item[] = [];
      for (const [i, input] of inputs.entries()) {
        try {
          items.push(await step(tx, input));
        } catch (err) {
          throw this.explain(err, many ? i : null);
        }
      }
      if (completeAfter) await this.complete(tx, items, []);
      return items;
    });
  }

  /** A step's error as the answer, named by the item's index when the request has several. */
  private explain(err: unknown, index: number | null): unknown {
    const known = toServiceError(err, this.dialect, { kind: 'item', label: this.spec.label });
    if (!known) return err;
    return index === null ? known : known.within([index]);
  }

  private rejectRepeatedIds(ids: string[]): void {
    const problems = repeatedIds(ids);
    if (problems.length > 0) throw invalid(problems, 'Invalid request');
  }


  private encode(attr: AttrSpec, v: unknown): unknown {
    if (v === null) return null;
    if (attr.type === 'boolean') return this.dialect.encodeBoolean(v as boolean);
    if (attr.type === 'json') return this.dialect.encodeJson(v);
    if (attr.type === 'timestamp') return normaliseDateTime(v as string);
    return v;
  }

  private decode(row: Attrs): Item {
    const item: Item = { id: row.id as string };
    for (const name of this.columns) {
      const v = row[name];
      const type: AttrType = this.queryable.types[name];
      item[name] = v === null || v === undefined ? null : type === 'boolean' ? this.dialect.decodeBoolean(v) : type === 'json' ? this.dialect.decodeJson(v) : v;
    }
    return item;
  }
}
