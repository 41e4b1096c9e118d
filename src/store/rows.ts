import type { FieldDef } from '../domain/field-types/field-type.ts';
import { fieldType } from '../domain/field-types/registry.ts';
import { SYSTEM_ORDER, fieldColumn } from '../domain/row-columns.ts';
import type { CursorValue } from '../domain/cursor.ts';
import type { RowFilter } from '../domain/row-filter.ts';
import type { SortKey } from '../domain/row-sort.ts';
import { randomUUID } from 'node:crypto';
import { ROW_ID } from '../domain/codes.ts';
import { type RowCreate, missingDetails } from '../domain/row-values.ts';
import { ServiceError, invalid } from '../domain/errors.ts';
import { classifyDatabaseError, duplicateRow, rowExists, toServiceError } from './database-errors.ts';
import { type Compilable, CompiledQuery, type RawBuilder, sql } from 'kysely';
import { type Database, type Db, afterCommit, readRows } from './database.ts';
import { QueryTemplate } from './query-template.ts';
import type { Dialect } from './dialect.ts';
import { afterCursor, compileFilter, orderBy } from './row-sql.ts';
import type { WriteContext } from './resources/resource-spec.ts';
import type { TableDef } from '../domain/table.ts';
import { TableMemo } from '../domain/compiled-table.ts';
import type { RawRow, RowRecord } from '../domain/row.ts';
import { rowRecord } from '../domain/row-record.ts';
import type { ChangeLog } from './change-log.ts';
import { type AnswerWithWrite, type LoneWrite, type RowChange, changeOf } from './change-entries.ts';
import type { LinkFollow, LinkWrites, WrittenRow } from './links/link-writes.ts';
import { isLinkField, linkOptions } from '../domain/field-types/link.ts';
import { NotKeptByWrite, inHeldScope } from './transaction-hooks.ts';

/** What RowStore asks of file attachments (files/files.ts) within a write. */
export interface FileAttachments {
  beforeWrite(tx: Db, table: TableDef, rowId: string, values: Map<FieldDef, unknown>, now: string): Promise<void>;
  beforeDelete(tx: Db, table: TableDef, rowIds: string[], now: string): Promise<void>;
}

// Every method taking ids treats one that no row can have (not a ROW_ID) as absent, without asking
// the database: PostgreSQL fails on U+0000 rather than finding nothing.


const SYSTEM = SYSTEM_ORDER.map((c) => c.column);
if (SYSTEM.join() !== 'id,created_at,updated_at,created_by,updated_by') throw new Error('RowStore.newRow fills the system columns in another order');

/** Rows per statement of followLinks. */
const FOLLOW_EACH = 1000;

/** Compiled statements of a table version, by purpose (its column lists and decoders are the version's CompiledTable). */
const templatesOf = new TableMemo('RowStore statements, by purpose', () => new Map<string, QueryTemplate<RawRow>>());

/** Reads and writes the rows of user tables: one typed column per field. */
export class RowStore {
  private readonly dialect: Dialect;

  constructor(
    private readonly database: Database,
    /** File attachments: a write to a table with file fields attaches and releases files in its transaction. */
    private readonly files?: FileAttachments,
    /** The change log: every row write is recorded in its transaction. */
    private readonly changes?: ChangeLog,
    /** Links between tables: a write's links checked and followed, a delete's onDelete applied, in its transaction. */
    private readonly links?: LinkWrites,
  ) {
    this.dialect = database.dialect;
  }

  /** Records changes in the change log (written when the transaction commits, or sooner when there are many). */
  private async logged(db: Db, table: TableDef, ctx: WriteContext, changes: RowChange[]): Promise<void> {
    await this.changes?.record(db, table, ctx, changes);
  }

  /**
   * Runs a single-row write (`query` returns the row's columns) and logs what it did: in a
   * transaction, for its commit; alone, with its entry in the same atomic step (ChangeLog.writeAlone),
   * and with `answer`, a create's, the request's answer too.
   */
  private async writeOne(db: Db, table: TableDef, ctx: WriteContext, query: CompiledQuery, what: LoneWrite, answer?: AnswerWithWrite): Promise<RawRow[]> {
    if (!db.isTransaction) {
      // In a request whose answer its create keeps (an Idempotency-Key's): that create alone is written, with it.
      if (ctx.keptAnswer !== answer || (answer && !this.changes)) throw new NotKeptByWrite(`a single-row ${what.type}`);
      if (this.changes) return this.changes.writeAlone(db, table, ctx, query, what, answer);
    }
    // A request's held transaction (an Idempotency-Key): the write and its entry in one statement where the database can.
    const withEntry = this.changes && inHeldScope() ? await this.changes.writeWithEntryIn(db, table, ctx, query, what) : undefined;
    if (withEntry) return withEntry;
    const { rows } = await db.executeQuery<RawRow>(query);
    await this.logged(db, table, ctx, rows.map((row) => changeOf(what, row)));
    return rows;
  }

  private static changedFields(values: Map<FieldDef, unknown>): string[] {
    return [...values.keys()].map((f) => f.code);
  }

  /** Before a row is written: its file values checked and attached, the files they replace released. */
  private async attachFiles(db: Db, table: TableDef, id: string, values: Map<FieldDef, unknown>, now: string): Promise<void> {
    if (!table.hasFiles || !this.files) return;
    if (!db.isTransaction) throw new Error('a write to a table with file fields runs in a transaction (RowStore.needsTransaction)');
    await this.files.beforeWrite(db, table, id, values, now);
  }

  /**
   * Whether a write to the table must run in a transaction of its own even when it is one
   * statement: when it has files to attach. (Its change entry goes in with a lone write.)
   */
  needsTransaction(table: TableDef): boolean {
    return (table.hasFiles && this.files !== undefined) || (this.links?.concerns(table) ?? false);
  }

  /** After rows were written: their link values checked and followed (LinkWrites). */
  private async linked(db: Db, table: TableDef, items: WrittenRow[], ctx: WriteContext, at?: (k: number, err: ServiceError) => unknown): Promise<void> {
    if (!this.links || !items.some((item) => [...item.values.keys()].some(isLinkField))) return;
    if (!db.isTransaction) throw new Error('a write to a table with link fields runs in a transaction (RowStore.needsTransaction)');
    await this.links.written(db, this, table, items, ctx, at);
  }

  /** Rows written per table by each open transaction, for the statistics once it commits. */
  private readonly uncommitted = new WeakMap<Db, Map<string, number>>();

  /**
   * Row writes move the planner's statistics: counted once they are committed. (Counted as they
   * were made, the rows of an import still open set off an analysis every 500 rows, each of a
   * table that to any other session had not changed: 37 s of PostgreSQL's time for a million rows.)
   */
  private wrote(db: Db, table: TableDef, rows: number): void {
    if (rows <= 0) return;
    if (!db.isTransaction) {
      this.database.statistics.noteWrites(table.physical, rows);
      return;
    }
    let counts = this.uncommitted.get(db);
    if (!counts) {
      const tables = new Map<string, number>();
      counts = tables;
      this.uncommitted.set(db, tables);
      afterCommit(db, () => {
        for (const [physical, n] of tables) this.database.statistics.noteWrites(physical, n);
      });
    }
    counts.set(table.physical, (counts.get(table.physical) ?? 0) + rows);
  }

  /**
   * The table version's statement named `key`, built once. `use` says how it is run: `byId`, a
   * single-row statement by id, is prepared on PostgreSQL (Database.prepare); `keep`, one that
   * keeps values it was built with (QueryTemplate.build).
   */
  private template(db: Db, table: TableDef, key: string, make: (db: Db, arg: (i: number) => string) => Compilable<unknown>, use?: 'byId' | 'keep'): QueryTemplate<RawRow> {
    const templates = table.compiled.memo(templatesOf);
    let t = templates.get(key);
    if (!t) {
      // Update templates are per set of columns written, page templates per filter and sort; keep the cache bounded.
      if (templates.size > 200) templates.clear();
      // Each answers rows of the table, as RawRow types them (a delete's: the id only), or none.
      t = QueryTemplate.build<RawRow>((arg) => make(db, arg), use === 'keep');
      if (use === 'byId') this.database.prepare(t.sql);
      templates.set(key, t);
    }
    return t;
  }

  /** A new row as it is inserted: every column in `columns(table)` order, a field left out null. */
  private newRow(table: TableDef, id: string, values: Map<FieldDef, unknown>, ctx: WriteContext): unknown[] {
    const { columns, fields, place } = table.compiled;
    const row: unknown[] = new Array(columns.length).fill(null);
    // The system columns, in SYSTEM order (checked where SYSTEM is defined).
    row[0] = id;
    row[1] = row[2] = ctx.now;
    row[3] = row[4] = ctx.memberId;
    for (const [f, v] of values) {
      const k = place.get(f.id);
      if (k === undefined) throw new Error(`field ${f.code} is not a field of table ${table.id}`);
      if (v !== null) row[k] = fields[k - SYSTEM.length].type.toDb(v, this.dialect);
    }
    return row;
  }

  /**
   * A row as newRow made it, as the database would return it: the values as bound decode and
   * render as the ones read back do (RawRow). A create answers it and logs it, so its insert
   * returns only the id: the database neither renders nor sends the row back.
   */
  private boundRow(table: TableDef, row: unknown[]): RawRow {
    const columns = this.columns(table);
    const raw: Record<string, unknown> = {};
    for (let k = 0; k < columns.length; k++) raw[columns[k]] = row[k];
    // newRow filled the system columns first, in SYSTEM order.
    return raw as RawRow;
  }

  /** The single-row insert (its id returned, or none when `ifAbsent` and the id exists), and the row it writes. */
  private insertOne(db: Db, table: TableDef, id: string, values: Map<FieldDef, unknown>, ctx: WriteContext, ifAbsent: boolean): { query: CompiledQuery; what: LoneWrite & { type: 'create' } } {
    const columns = this.columns(table);
    const t = this.template(db, table, ifAbsent ? 'insert-if-absent' : 'insert', (d, arg) => {
      const q = d.insertInto(table.physical).values(Object.fromEntries(columns.map((c, i) => [c, arg(i)])));
      return (ifAbsent ? q.onConflict((oc) => oc.column('id').doNothing()) : q).returning('id');
    }, 'byId');
    const row = this.newRow(table, id, values, ctx);
    return { query: t.with(row), what: { type: 'create', row: this.boundRow(table, row) } };
  }

  /** The physical columns a record is made from. */
  columns(table: TableDef): readonly string[] {
    return table.compiled.columns;
  }

  toRecord(table: TableDef, raw: RawRow): RowRecord {
    return rowRecord(table, raw, this.dialect);
  }

  /** The written fields' columns as bound: part of a row, not a RawRow. */
  private encode(values: Map<FieldDef, unknown>): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [f, v] of values) out[fieldColumn(f.id)] = v === null ? null : fieldType(f.type).toDb(v, this.dialect);
    return out;
  }

  /** The row's columns as the database returns them, to render or decode (as every method here answers rows). */
  async get(db: Db, table: TableDef, id: string): Promise<RawRow | undefined> {
    if (!ROW_ID.test(id)) return undefined;
    const t = this.template(db, table, 'get', (d, arg) => d.selectFrom(table.physical).select(this.columns(table)).where('id', '=', arg(0)), 'byId');
    return (await t.run(db, [id])).rows[0];
  }

  /** Inserts a new row; an id that exists is a 409. */
  async insert(db: Db, table: TableDef, id: string, values: Map<FieldDef, unknown>, ctx: WriteContext): Promise<RawRow> {
    await this.attachFiles(db, table, id, values, ctx.now);
    try {
      const { query, what } = this.insertOne(db, table, id, values, ctx, false);
      await this.writeOne(db, table, ctx, query, what, db.isTransaction ? undefined : ctx.keptAnswer);
      this.wrote(db, table, 1);
      await this.linked(db, table, [{ id, values, created: true }], ctx);
      return what.row;
    } catch (err) {
      if (err instanceof ServiceError) throw err;
      throw toServiceError(err, this.dialect, { kind: 'row', id }) ?? err;
    }
  }

  /** Inserts unless the id exists, without failing (and so without aborting a PostgreSQL transaction). */
  async insertIfAbsent(db: Db, table: TableDef, id: string, values: Map<FieldDef, unknown>, ctx: WriteContext): Promise<RawRow | undefined> {
    await this.attachFiles(db, table, id, values, ctx.now);
    const { query, what } = this.insertOne(db, table, id, values, ctx, true);
    const rows = await this.writeOne(db, table, ctx, query, what);
    this.wrote(db, table, rows.length);
    if (rows.length === 0) return undefined;
    await this.linked(db, table, [{ id, values, created: true }], ctx);
    return what.row;
  }

  /** Partial update; undefined when there is no such row. updatedAt always moves, even within one millisecond. */
  async update(db: Db, table: TableDef, id: string, values: Map<FieldDef, unknown>, ctx: WriteContext): Promise<RawRow | undefined> {
    if (!ROW_ID.test(id)) return undefined;
    await this.attachFiles(db, table, id, values, ctx.now);
    const changes = Object.entries(this.encode(values));
    const key = `update:${changes.map(([c]) => c).join(',')}`;
    const t = this.template(db, table, key, (d, arg) =>
      d
        .updateTable(table.physical)
        .set({
          updated_at: this.dialect.nextTimestamp('updated_at', arg(0)),
          updated_by: arg(1),
          ...Object.fromEntries(changes.map(([c], i) => [c, arg(3 + i)])),
        })
        .where('id', '=', arg(2))
        .returning(this.columns(table)),
      'byId',
    );
    const rows = await this.writeOne(db, table, ctx, t.with([ctx.now, ctx.memberId, id, ...changes.map(([, v]) => v)]), {
      type: 'update',
      changedFields: RowStore.changedFields(values),
    });
    this.wrote(db, table, rows.length);
    if (rows.length > 0) await this.linked(db, table, [{ id, values, created: false }], ctx);
    return rows[0];
  }

  /**
   * One link field of many rows followed (the other side of a pair, an unlink on delete:
   * LinkWrites): from each row's value the ids of `drop` removed and those of `add` appended (where
   * not there, if it `mayHold` them), by the database from the value the row holds as it is written (LinkSql.followed),
   * in one statement per 1,000 rows binding them as lists, each row with its update entry naming
   * the field, rendered by the database too (ChangeLog.updateWithEntries). In a transaction
   * only; rows that are gone are skipped. Only a link value is written: no file is attached.
   */
  async followLinks(db: Db, table: TableDef, field: FieldDef, items: readonly LinkFollow[], ctx: WriteContext): Promise<void> {
    if (!db.isTransaction) throw new Error('RowStore.followLinks: in a transaction');
    const given = items.filter((item) => ROW_ID.test(item.id));
    const { links } = this.dialect;
    const column = fieldColumn(field.id);
    const multiple = linkOptions(field).multiple;
    // PostgreSQL writes the entries in the same statement, from the rows the update returns.
    const returning = this.changes !== undefined && this.dialect.writingWith;
    const t = this.template(db, table, `follow-links:${column}:${multiple}:${returning}`, (d, arg) => {
      const list = links.listRows(
        Array.from({ length: links.listParameters(4) }, (_, k) => sql`${arg(2 + k)}`),
        ['rh_id', 'rh_add', 'rh_drop', 'rh_may_hold'],
      );
      // Unquoted rh_ names (LinkSql.listRows).
      const value = links.followed(sql.raw(`rh_t."${column}"`), sql.raw('rh_list.rh_add'), sql.raw('rh_list.rh_drop'), sql.raw('rh_list.rh_may_hold'), multiple);
      const query = sql<RawRow>`update ${sql.table(table.physical)} as rh_t
        set ${sql.ref(column)} = ${value}, updated_at = ${this.dialect.nextTimestamp('updated_at', arg(0))}, updated_by = ${arg(1)}
        from ${list} where rh_t.id = rh_list.rh_id${returning ? sql` returning rh_t.*, rh_list.rh_k` : sql``}`;
      return { compile: () => query.compile(d) };
    });
    const json = (ids: readonly string[]) => (ids.length === 0 ? null : JSON.stringify(ids));
    for (let i = 0; i < given.length; i += FOLLOW_EACH) {
      const part = given.slice(i, i + FOLLOW_EACH);
      const ids = part.map((item) => item.id);
      const lists = [ids, part.map((item) => json(item.add)), part.map((item) => json(item.drop)), part.map((item) => (item.mayHold ? 'y' : null))];
      const query = t.with([ctx.now, ctx.memberId, ...links.bindList(lists)]);
      const n = this.changes ? await this.changes.updateWithEntries(db, table, ctx, query, ids, [field.code]) : Number((await db.executeQuery(query)).numAffectedRows ?? 0);
      this.wrote(db, table, n);
    }
  }

  /**
   * A create as POST /rows means it: a new row, or with `upsert` and an id that exists, a partial
   * update of that row. Run it in a transaction unless it is one statement (`createIsOneStatement`).
   */
  async create(db: Db, table: TableDef, input: RowCreate, ctx: WriteContext, prefix = 'values'): Promise<{ created: boolean; row: RawRow }> {
    if (!input.upsert || input.id === undefined) {
      return { created: true, row: await this.insert(db, table, input.id ?? randomUUID(), input.values, ctx) };
    }
    const insertedFlag = this.dialect.upsertInserted;
    if (insertedFlag && input.missingRequired.length === 0) return this.upsert(db, table, input.id, input.values, ctx, insertedFlag);
    const updated = await this.update(db, table, input.id, input.values, ctx);
    if (updated) return { created: false, row: updated };
    if (input.missingRequired.length > 0) throw invalid(missingDetails(input.missingRequired, prefix), 'Invalid row');
    const inserted = await this.insertIfAbsent(db, table, input.id, input.values, ctx);
    if (inserted) return { created: true, row: inserted };
    // Another writer inserted it in between: the upsert becomes an update.
    return { created: false, row: (await this.update(db, table, input.id, input.values, ctx)) as RawRow };
  }

  /**
   * Whether `create` makes one statement, atomic without a transaction of its own: all but an
   * upsert that may insert where the database cannot tell an insert from an update (SQLite).
   * (An upsert lacking a required field can only update: one UPDATE, or a 400 when no row matched.)
   */
  createIsOneStatement(input: RowCreate): boolean {
    return !input.upsert || input.id === undefined || input.missingRequired.length > 0 || this.dialect.upsertInserted !== null;
  }

  /**
   * An upsert that carries every required field, as one INSERT … ON CONFLICT DO UPDATE: the row as
   * `insert` makes it, or else the partial update `update` makes (the given fields, updatedAt moved,
   * createdAt/createdBy kept). The database says which it was.
   */
  private async upsert(db: Db, table: TableDef, id: string, values: Map<FieldDef, unknown>, ctx: WriteContext, inserted: RawBuilder<boolean>): Promise<{ created: boolean; row: RawRow }> {
    await this.attachFiles(db, table, id, values, ctx.now);
    const columns = this.columns(table);
    const given = [...values.keys()].map((f) => fieldColumn(f.id));
    const t = this.template(db, table, `upsert:${given.join(',')}`, (d, arg) =>
      d
        .insertInto(table.physical)
        .values(Object.fromEntries(columns.map((c, i) => [c, arg(i)])))
        .onConflict((oc) =>
          oc.column('id').doUpdateSet({
            ...Object.fromEntries(given.map((c) => [c, sql.ref(`excluded.${c}`)])),
            updated_at: this.dialect.nextTimestamp(`${table.physical}.updated_at`, sql.ref('excluded.updated_at')),
            updated_by: sql.ref('excluded.updated_by'),
          }),
        )
        .returning([...columns, inserted.as('inserted')]),
      'byId',
    );
    const [raw] = await this.writeOne(db, table, ctx, t.with(this.newRow(table, id, values, ctx)), { type: 'upsert', changedFields: RowStore.changedFields(values) });
    this.wrote(db, table, 1);
    await this.linked(db, table, [{ id, values, created: raw.inserted === true }], ctx);
    return { created: raw.inserted === true, row: raw };
  }

  /** The ids among `ids` that exist in the table. */
  async existing(db: Db, table: TableDef, given: string[]): Promise<Set<string>> {
    const ids = given.filter((id) => ROW_ID.test(id));
    const found = new Set<string>();
    for (let i = 0; i < ids.length; i += 500) {
      const rows = await db.selectFrom(table.physical).select('id').where('id', 'in', ids.slice(i, i + 500)).execute();
      for (const r of rows) found.add(r.id as string);
    }
    return found;
  }

  /**
   * Inserts new rows, in order, in one statement per `dialect.rowsPerInsert` rows (each compiled
   * once per table version and number of rows: building a query that binds 14,000 values anew cost
   * more than running it). On PostgreSQL in a transaction, all of them in one statement with their
   * entries, which binds one array per column whatever the number of rows
   * (ChangeLog.insertWithEntries). An error of row k (its id exists, a file value is wrong) is
   * answered as `at(k, error)` says.
   */
  async insertMany(
    db: Db,
    table: TableDef,
    items: { id: string; values: Map<FieldDef, unknown> }[],
    ctx: WriteContext,
    at: (k: number, err: ServiceError) => unknown = (_k, err) => err,
  ): Promise<RawRow[]> {
    const columns = this.columns(table);
    if (table.hasFiles && this.files) {
      for (const [k, { id, values }] of items.entries()) {
        try {
          await this.attachFiles(db, table, id, values, ctx.now);
        } catch (err) {
          throw err instanceof ServiceError ? at(k, err) : err;
        }
      }
    }
    const rows = items.map(({ id, values }) => this.newRow(table, id, values, ctx));
    /** Whether the entries are written (by the database, from the rows written). */
    let logged = false;
    // On PostgreSQL in a transaction, each statement writes its rows' entries too (ChangeLog.insertWithEntries).
    const withEntries = this.changes !== undefined && this.dialect.writingWith && db.isTransaction;
    const statement = (n: number) =>
      this.template(db, table, `insert-many:${n}`, (d, arg) =>
        d.insertInto(table.physical).values(Array.from({ length: n }, (_, r) => Object.fromEntries(columns.map((c, k) => [c, arg(r * columns.length + k)])))),
      );
    /** The error of a failed statement that inserted rows `from`…: the row whose id exists, if it names one. */
    const failure = (err: unknown, from: number, k: number) =>
      k >= 0 ? at(from + k, rowExists(items[from + k].id)) : (toServiceError(err, this.dialect, { kind: 'rows' }) ?? err);
    const perStatement = this.dialect.rowsPerInsert(columns.length);
    if (perStatement === 1 && db.isTransaction) {
      // In a transaction on SQLite: the one statement run for each row, without the query builder.
      let rowids: { first: number; last: number };
      try {
        rowids = this.database.insertEach(statement(1).with([]).sql, rows);
      } catch (err) {
        const k = (err as { rowIndex?: number }).rowIndex;
        throw failure(err, 0, k !== undefined && classifyDatabaseError(err, this.dialect) === 'unique_violation' ? k : -1);
      }
      // One insert after another takes rowids one after another: their entries are made by SQLite from them.
      if (this.changes && rows.length > 0 && rowids.last - rowids.first === rows.length - 1) {
        this.changes.insertedRows(db, table, ctx, rowids.first, rowids.last);
        logged = true;
      }
    } else {
      // rowsPerInsert bounds the values a VALUES list binds; insertWithEntries binds one array per column however many rows.
      const each = withEntries ? rows.length : perStatement;
      for (let i = 0; i < rows.length; i += each) {
        const chunk = rows.slice(i, i + each);
        try {
          if (withEntries) await this.changes?.insertWithEntries(db, table, ctx, chunk);
          else await statement(chunk.length).run(db, chunk.flat());
        } catch (err) {
          throw failure(err, i, duplicateRow(err, this.dialect, items.slice(i, i + chunk.length).map((x) => x.id)));
        }
      }
      logged = withEntries;
    }
    this.wrote(db, table, rows.length);
    await this.linked(db, table, items.map(({ id, values }) => ({ id, values, created: true })), ctx, at);
    // The rows as the database would return them: the values as bound, which decode and render alike.
    const written = rows.map((row) => this.boundRow(table, row));
    if (!logged) await this.logged(db, table, ctx, written.map((row) => ({ type: 'create', rowId: row.id, row, changedFields: null })));
    return written;
  }

  async deleteMany(db: Db, table: TableDef, ids: string[], ctx: WriteContext): Promise<void> {
    if (this.links?.concerns(table)) await this.links.beforeDelete(db, this, table, ids, ctx);
    await this.files?.beforeDelete(db, table, ids, ctx.now);
    for (let i = 0; i < ids.length; i += 500) {
      await db.deleteFrom(table.physical).where('id', 'in', ids.slice(i, i + 500)).execute();
    }
    this.wrote(db, table, ids.length);
    await this.logged(db, table, ctx, ids.map((rowId) => ({ type: 'delete', rowId, row: null, changedFields: null })));
  }

  async delete(db: Db, table: TableDef, id: string, ctx: WriteContext): Promise<boolean> {
    if (!ROW_ID.test(id)) return false;
    if (this.links?.concerns(table)) await this.links.beforeDelete(db, this, table, [id], ctx);
    await this.files?.beforeDelete(db, table, [id], ctx.now);
    const t = this.template(db, table, 'delete', (d, arg) => d.deleteFrom(table.physical).where('id', '=', arg(0)).returning('id'), 'byId');
    const deleted = (await this.writeOne(db, table, ctx, t.with([id]), { type: 'delete' })).length;
    this.wrote(db, table, deleted);
    return deleted > 0;
  }

  /**
   * Every row of a selection, in key order, as arrays in `columns(table)` order, a chunk at a time,
   * as the database reads an export (Database.scan: one snapshot where it can, else keyset pages).
   * Stops reading when the consumer stops asking (return()).
   */
  scan(
    database: Database,
    table: TableDef,
    q: { filter: RowFilter | null; keys: SortKey[]; limit: number | null; chunk: number },
  ): AsyncGenerator<unknown[][]> {
    const whole = { filter: q.filter, keys: q.keys, after: null };
    return database.scan({
      query: (limit) => this.pageQuery(database.db, table, { ...whole, limit }),
      limit: q.limit,
      chunk: q.chunk,
      pages: () => this.pages(database.db, table, { ...whole, limit: q.limit, chunk: q.chunk }),
    });
  }

  /** The selection's rows by keyset pages, `q.chunk` at a time. */
  private async *pages(db: Db, table: TableDef, q: { filter: RowFilter | null; keys: SortKey[]; limit: number | null; chunk: number }): AsyncGenerator<unknown[][]> {
    const columns = this.columns(table);
    const whole = { filter: q.filter, keys: q.keys, after: null };
    let remaining = q.limit ?? Number.POSITIVE_INFINITY;
    let after: CursorValue[] | null = null;
    while (remaining > 0) {
      const page = await this.page(db, table, { ...whole, after, limit: Math.min(q.chunk, remaining) });
      if (page.rows.length > 0) yield page.rows.map((r) => columns.map((c) => r[c]));
      remaining -= page.rows.length;
      if (page.next === null) return;
      after = page.next;
    }
  }

  /**
   * The one keyset page of every reader (the list, the export, the changes feed): up to `limit`
   * rows in key order after the cursor's values, raw (to render or decode), and the key values of
   * the last one when more rows follow (to make the next cursor from), else null.
   */
  async page(db: Db, table: TableDef, q: PageQuery): Promise<Page> {
    // The page's statement selects every column (`columns(table)`).
    const raw = (await readRows(db, this.pageQuery(db, table, { ...q, limit: q.limit + 1 }))) as RawRow[];
    if (raw.length <= q.limit) return { rows: raw, next: null };
    const rows = raw.slice(0, q.limit);
    const last = rows[rows.length - 1];
    return { rows, next: q.keys.map((k) => last[k.target.column] as CursorValue) };
  }

  /**
   * The statement of a page (limit null: every row): what the planner is asked (tests check its
   * plan). Given `text` (the filter and sort as the request wrote them), it is compiled once per
   * table version, filter, sort and cursor shape and reused, with the cursor's values and the limit
   * as its arguments; building the query anew cost a list page about 30 µs. Not where a cursor
   * value needs a transformation of its own (a text key's bounded prefix on PostgreSQL).
   */
  pageQuery(db: Db, table: TableDef, q: Omit<PageQuery, 'limit'> & { limit: number | null }): CompiledQuery {
    const build = (after: CursorValue[] | null, limit: unknown) => {
      let query = db.selectFrom(table.physical).select(this.columns(table));
      if (q.filter) query = query.where(compileFilter(q.filter, this.dialect, table.physical));
      if (after) query = query.where(afterCursor(q.keys, after, this.dialect));
      query = query.orderBy(orderBy(q.keys, this.dialect, q.filter));
      return limit === null ? query : query.limit(limit as number);
    };
    if (q.text === undefined || !plainKeys(q.keys, this.dialect)) return build(q.after, q.limit).compile();
    const after = q.after ?? [];
    // Null cursor values are written as IS NULL tests, so their places are part of the shape.
    const shape = `page:${q.text}\u0000${q.after === null ? '-' : after.map((v) => (v === null ? 'n' : 'v')).join('')}\u0000${q.limit === null ? '-' : 'l'}`;
    const t = this.template(
      db,
      table,
      shape,
      (_d, arg) => build(q.after && after.map((v, i) => (v === null ? null : arg(i))), q.limit === null ? null : arg(after.length)),
      'keep',
    );
    return t.with([...after, q.limit]);
  }
}

/** Whether every cursor value binds as it is: no key is a text field that PostgreSQL orders by its bounded prefix. */
function plainKeys(keys: readonly SortKey[], dialect: Dialect): boolean {
  return dialect.textKeyPrefix === null || keys.every((k) => k.target.system || k.target.type.column !== 'text');
}

export interface Page {
  rows: RawRow[];
  next: CursorValue[] | null;
}

export interface PageQuery {
  filter: RowFilter | null;
  /** The filter and sort as the request wrote them: the page's statement is cached by them. */
  text?: string;
  keys: SortKey[];
  after: CursorValue[] | null;
  limit: number;
}
