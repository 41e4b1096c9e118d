import type { FieldDef } from '../domain/field-types/field-type.ts';
import { fieldType } from '../domain/field-types/registry.ts';
import { fieldColumn } from '../domain/row-columns.ts';
import type { RowFilter } from '../domain/row-filter.ts';
import type { SortKey } from '../domain/row-sort.ts';
import { conflict } from '../errors.ts';
import type { Db } from './database.ts';
import type { Dialect } from './dialect.ts';
import { afterCursor, compileFilter, orderBy } from './row-sql.ts';
import type { WriteContext } from './resources/resource-spec.ts';
import type { TableDef } from './table-catalog.ts';

/** The row record of the seed spec: a single-row retrieval returns exactly this. */
export interface RowRecord {
  id: string;
  createdAt: string;
  updatedAt: string;
  createdBy: string;
  updatedBy: string;
  values: Record<string, unknown>;
}

export type RawRow = Record<string, unknown>;

const SYSTEM = ['id', 'created_at', 'updated_at', 'created_by', 'updated_by'];

/** Reads and writes the rows of user tables: one typed column per field. */
export class RowStore {
  constructor(private readonly dialect: Dialect) {}

  /** The physical columns a record is made from. */
  columns(table: TableDef): string[] {
    return [...SYSTEM, ...table.fields.map((f) => fieldColumn(f.id))];
  }

  toRecord(table: TableDef, raw: RawRow): RowRecord {
    const values: Record<string, unknown> = {};
    for (const f of table.fields) {
      const v = raw[fieldColumn(f.id)];
      values[f.code] = v === null || v === undefined ? null : fieldType(f.type).fromDb(v, this.dialect);
    }
    return {
      id: raw.id as string,
      createdAt: raw.created_at as string,
      updatedAt: raw.updated_at as string,
      createdBy: raw.created_by as string,
      updatedBy: raw.updated_by as string,
      values,
    };
  }

  private encode(values: Map<FieldDef, unknown>): RawRow {
    const out: RawRow = {};
    for (const [f, v] of values) out[fieldColumn(f.id)] = v === null ? null : fieldType(f.type).toDb(v, this.dialect);
    return out;
  }

  async get(db: Db, table: TableDef, id: string): Promise<RowRecord | undefined> {
    const raw = await db.selectFrom(table.physical).select(this.columns(table)).where('id', '=', id).executeTakeFirst();
    return raw && this.toRecord(table, raw);
  }

  /** Inserts a new row; an id that exists is a 409. */
  async insert(db: Db, table: TableDef, id: string, values: Map<FieldDef, unknown>, ctx: WriteContext): Promise<RowRecord> {
    try {
      const raw = await db
        .insertInto(table.physical)
        .values({ id, created_at: ctx.now, updated_at: ctx.now, created_by: ctx.memberId, updated_by: ctx.memberId, ...this.encode(values) })
        .returning(this.columns(table))
        .executeTakeFirstOrThrow();
      return this.toRecord(table, raw);
    } catch (err) {
      if (this.dialect.isUniqueViolation(err)) throw conflict(`a row with id ${id} already exists; set options.upsert to update it`);
      throw err;
    }
  }

  /** Inserts unless the id exists, without failing (and so without aborting a PostgreSQL transaction). */
  async insertIfAbsent(db: Db, table: TableDef, id: string, values: Map<FieldDef, unknown>, ctx: WriteContext): Promise<RowRecord | undefined> {
    const raw = await db
      .insertInto(table.physical)
      .values({ id, created_at: ctx.now, updated_at: ctx.now, created_by: ctx.memberId, updated_by: ctx.memberId, ...this.encode(values) })
      .onConflict((oc) => oc.column('id').doNothing())
      .returning(this.columns(table))
      .executeTakeFirst();
    return raw && this.toRecord(table, raw);
  }

  /** Partial update; undefined when there is no such row. */
  async update(db: Db, table: TableDef, id: string, values: Map<FieldDef, unknown>, ctx: WriteContext): Promise<RowRecord | undefined> {
    const raw = await db
      .updateTable(table.physical)
      .set({ updated_at: ctx.now, updated_by: ctx.memberId, ...this.encode(values) })
      .where('id', '=', id)
      .returning(this.columns(table))
      .executeTakeFirst();
    return raw && this.toRecord(table, raw);
  }

  async delete(db: Db, table: TableDef, id: string): Promise<boolean> {
    const result = await db.deleteFrom(table.physical).where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** One page of rows in key order, after the cursor's values when given. Raw, so the caller can make the next cursor. */
  async page(
    db: Db,
    table: TableDef,
    q: { filter: RowFilter | null; keys: SortKey[]; after: (string | number | boolean | null)[] | null; limit: number },
  ): Promise<RawRow[]> {
    let query = db.selectFrom(table.physical).select(this.columns(table));
    if (q.filter) query = query.where(compileFilter(q.filter, this.dialect));
    if (q.after) query = query.where(afterCursor(q.keys, q.after));
    return query.orderBy(orderBy(q.keys, this.dialect)).limit(q.limit).execute();
  }
}
