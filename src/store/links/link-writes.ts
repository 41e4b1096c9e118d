import { ROW_ID } from '../../domain/codes.ts';
import { ServiceError, invalid } from '../../domain/errors.ts';
import type { FieldDef } from '../../domain/field-types/field-type.ts';
import { type EdgeSide, edgesOf, isLinkField, decodeLink, linkIds, linkOptions } from '../../domain/field-types/link.ts';
import { fieldColumn } from '../../domain/row-columns.ts';
import type { RawRow } from '../../domain/row.ts';
import type { TableDef } from '../../domain/table.ts';
import { type Database, type Db, afterCommit } from '../database.ts';
import type { WriteContext } from '../resources/resource-spec.ts';
import type { TableCatalog } from '../table-catalog.ts';
import { TableMemo } from '../../domain/compiled-table.ts';
import { QueryTemplate } from '../query-template.ts';
import { sql } from 'kysely';

/**
 * Links kept whole on every write (CONTRACT §11): the ids a write names exist (locked against a
 * concurrent delete on PostgreSQL until it commits), the edges follow the values, the other side
 * of a pair follows (an update, with its change entry, of each row whose inverse value changed),
 * and deleting rows applies each link's onDelete to the rows linking to them. RowStore calls it
 * inside the write's transaction (its tables' writes always run in one: RowStore.needsTransaction).
 */

/** What a link maintenance asks of the row store: the other side's rows updated and cascaded deletes, without coming back here for what it already did. */
export interface LinkRowWrites {
  /** One field of many rows set, each to its own value, with their change entries: set-based (RowStore.updateEach). */
  updateEach(db: Db, table: TableDef, field: FieldDef, items: readonly { id: string; value: unknown }[], ctx: WriteContext): Promise<RawRow[]>;
  deleteMany(db: Db, table: TableDef, ids: string[], ctx: WriteContext): Promise<void>;
}

/** One row just written: its id, the values written, and whether it is new (so it had no links before). */
export interface WrittenRow {
  id: string;
  values: Map<FieldDef, unknown>;
  created: boolean;
}

/** Ids per statement: a bulk's (at most 1,000 rows) in one. */
const CHUNK = 1000;

/** Statements inserting a table's link fields' edges, by field and size (edgeInsert). */
const edgeInserts = new TableMemo('LinkWrites edge inserts, by field and size', () => new Map<string, QueryTemplate>());

/**
 * The statement inserting up to `n` edges of a field of `table`: compiled once per table version,
 * field and size, `n` a power of two, padded with pairs of nulls that insert nothing (building
 * the insert of 1,000 edges anew took 30 ms, more than running it). Binds mine, other, mine, …
 */
function edgeInsert(db: Db, table: TableDef, field: FieldDef, n: number): QueryTemplate {
  const templates = table.compiled.memo(edgeInserts);
  const key = `${field.id}:${n}`;
  let t = templates.get(key);
  if (!t) {
    const edges = edgesOf(field);
    t = QueryTemplate.build((arg) => {
      const values = sql.join(Array.from({ length: n }, (_, k) => sql`(${arg(2 * k)}, ${arg(2 * k + 1)})`));
      return {
        compile: () =>
          sql`with rh_edges (rh_mine, rh_other) as (values ${values})
            insert into ${sql.table(edges.table)} (${sql.ref(edges.mine)}, ${sql.ref(edges.other)})
            select rh_mine, rh_other from rh_edges where rh_mine is not null`.compile(db),
      };
    });
    templates.set(key, t);
  }
  return t;
}

function chunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += CHUNK) out.push(items.slice(i, i + CHUNK));
  return out;
}

export class LinkWrites {
  /** Per open transaction, the rows being deleted (`tableId:rowId`): cascades stop at them, so cycles end. */
  private readonly deleting = new WeakMap<Db, Set<string>>();

  constructor(
    private readonly database: Database,
    private readonly catalog: TableCatalog,
  ) {}

  /** Whether writes to the table need link maintenance. */
  concerns(table: TableDef): boolean {
    return table.incoming.length > 0 || table.fields.some(isLinkField);
  }

  /**
   * A table's definition: from the catalog's memo where it holds it (the transaction's own reads
   * would load it anew every time), else read in the transaction (never on another connection of
   * the pool, which writers holding theirs could exhaust).
   */
  private async tableOf(tx: Db, id: string): Promise<TableDef> {
    const table = this.catalog.peek(this.database.db, id) ?? (await this.catalog.find(tx, id));
    if (!table) throw new ServiceError('schema_changed', `table ${id} changed while the request ran; send it again`);
    return table;
  }

  /** Edge rows written: counted for the planner's statistics once they are committed (an edge table is analysed as a user table is). */
  private edgesWritten(tx: Db, edges: string, n: number): void {
    if (n > 0) afterCommit(tx, () => this.database.statistics.noteWrites(edges, n));
  }

  /** The ids among `ids` that are rows of `table`, locked (PostgreSQL) so that none is deleted before this transaction ends. */
  private async existing(tx: Db, table: TableDef, ids: string[]): Promise<Set<string>> {
    const found = new Set<string>();
    const sorted = [...new Set(ids)].filter((id) => ROW_ID.test(id)).sort();
    for (const part of chunks(sorted)) {
      let q = tx.selectFrom(table.physical).select('id').where('id', 'in', part).orderBy('id');
      if (this.database.dialect.lockRows) q = q.forKeyShare();
      for (const r of await q.execute()) found.add(r.id as string);
    }
    return found;
  }

  /**
   * After rows of `table` were written: for each link field written, its ids checked, its edges
   * made to match, and for a pair the other side's values updated. `at(k, err)` places an error
   * of row k within the request (a bulk's `data[k]`).
   */
  async written(tx: Db, rows: LinkRowWrites, table: TableDef, items: WrittenRow[], ctx: WriteContext, at: (k: number, err: ServiceError) => unknown = (_k, err) => err): Promise<void> {
    for (const field of table.fields) {
      if (!isLinkField(field)) continue;
      const writes = items.flatMap((item, k) => (item.values.has(field) ? [{ k, item, ids: linkIds(item.values.get(field)) }] : []));
      if (writes.length > 0) await this.fieldWritten(tx, rows, table, field, writes, ctx, at);
    }
  }

  private async fieldWritten(
    tx: Db,
    rows: LinkRowWrites,
    table: TableDef,
    field: FieldDef,
    writes: { k: number; item: WrittenRow; ids: string[] }[],
    ctx: WriteContext,
    at: (k: number, err: ServiceError) => unknown,
  ): Promise<void> {
    const options = linkOptions(field);
    const target = options.table === table.id ? table : await this.tableOf(tx, options.table);
    const found = await this.existing(tx, target, writes.flatMap((w) => w.ids));
    for (const { k, ids } of writes) {
      const missing = ids.find((id) => !found.has(id));
      if (missing !== undefined) {
        throw at(k, invalid([{ path: `values.${field.code}`, message: `no row ${missing} in table ${target.code ?? target.id}` }], 'Invalid link'));
      }
    }
    const edges = edgesOf(field);
    // The links the rows had: none for a new row.
    const before = new Map<string, Set<string>>();
    const old = writes.filter((w) => !w.item.created).map((w) => w.item.id);
    for (const part of chunks(old)) {
      const found = await tx.selectFrom(edges.table).select([edges.mine, edges.other]).where(edges.mine, 'in', part).execute();
      for (const e of found) {
        const mine = e[edges.mine] as string;
        const set = before.get(mine) ?? new Set<string>();
        set.add(e[edges.other] as string);
        before.set(mine, set);
      }
    }
    /** For the other side of a pair: per target row, the rows that now link to it, and those that no longer do, in order. */
    const added = new Map<string, string[]>();
    const removed = new Map<string, string[]>();
    const toInsert: [string, string][] = [];
    const toDelete: { mine: string; other: string }[] = [];
    for (const { item, ids } of writes) {
      const had = before.get(item.id) ?? new Set<string>();
      const now = new Set(ids);
      for (const id of ids) {
        if (had.has(id)) continue;
        toInsert.push([item.id, id]);
        added.set(id, [...(added.get(id) ?? []), item.id]);
      }
      for (const id of had) {
        if (now.has(id)) continue;
        toDelete.push({ mine: item.id, other: id });
        removed.set(id, [...(removed.get(id) ?? []), item.id]);
      }
    }
    for (const e of toDelete) await tx.deleteFrom(edges.table).where(edges.mine, '=', e.mine).where(edges.other, '=', e.other).execute();
    for (const part of chunks(toInsert)) {
      const n = 2 ** Math.ceil(Math.log2(part.length));
      const args: (string | null)[] = part.flat();
      while (args.length < 2 * n) args.push(null);
      await tx.executeQuery(edgeInsert(tx, table, field, n).with(args));
    }
    this.edgesWritten(tx, edges.table, toDelete.length + toInsert.length);
    if (options.inverseField === undefined) return;
    const partner = target.fields.find((f) => f.id === options.inverseField);
    if (!partner) throw new ServiceError('schema_changed', `table ${target.id} changed while the request ran; send it again`);
    const partnerMultiple = linkOptions(partner).multiple;
    if (!partnerMultiple) await this.singleSideHolds(tx, edges, partner, [...added.keys()]);
    await this.followOtherSide(tx, rows, target, partner, partnerMultiple, added, removed, ctx);
  }

  /** A single side of a pair links to at most one row: a second link is refused (409), never moved silently. */
  private async singleSideHolds(tx: Db, edges: EdgeSide, partner: FieldDef, targets: string[]): Promise<void> {
    for (const part of chunks(targets)) {
      const rows = await tx.selectFrom(edges.table).select([edges.other, edges.mine]).where(edges.other, 'in', part).orderBy(edges.other).execute();
      const seen = new Map<string, string>();
      for (const r of rows) {
        const row = r[edges.other] as string;
        const first = seen.get(row);
        if (first !== undefined) {
          throw new ServiceError('in_use', `row ${row} already links to row ${first} in field ${partner.code}, which holds one link; unlink it there first`, [
            { path: partner.code, message: `row ${row} links to ${first}` },
          ]);
        }
        seen.set(row, r[edges.mine] as string);
      }
    }
  }

  /**
   * The other field of a pair updated on every target row whose links changed: appended in order,
   * removed where gone. Set-based: the rows' values read (and on PostgreSQL locked, in id order,
   * so that no concurrent write rewrites a value from what it read before this one's, and two
   * such writes never wait on each other in a cycle), then written by one statement per chunk,
   * each row with its change entry (RowStore.updateEach).
   */
  private async followOtherSide(
    tx: Db,
    rows: LinkRowWrites,
    target: TableDef,
    partner: FieldDef,
    multiple: boolean,
    added: Map<string, string[]>,
    removed: Map<string, string[]>,
    ctx: WriteContext,
  ): Promise<void> {
    const touched = [...new Set([...added.keys(), ...removed.keys()])].sort();
    const column = fieldColumn(partner.id);
    const current = new Map<string, string[]>();
    for (const part of chunks(touched)) {
      let q = tx.selectFrom(target.physical).select(['id', column]).where('id', 'in', part).orderBy('id');
      if (this.database.dialect.lockRows) q = q.forNoKeyUpdate();
      for (const r of await q.execute()) current.set(r.id as string, linkIds(decodeLink(r[column], this.database.dialect)));
    }
    const updates: { id: string; value: unknown }[] = [];
    for (const id of touched) {
      const had = current.get(id);
      if (had === undefined) continue;
      const gone = new Set(removed.get(id) ?? []);
      const ids = had.filter((x) => !gone.has(x));
      const present = new Set(ids);
      for (const x of added.get(id) ?? []) {
        if (present.has(x)) continue;
        present.add(x);
        ids.push(x);
      }
      updates.push({ id, value: ids.length === 0 ? null : multiple ? ids : ids[ids.length - 1] });
    }
    await rows.updateEach(tx, target, partner, updates, ctx);
  }

  /**
   * Before rows of `table` are deleted: each link to them acts as its onDelete says (restrict: 409;
   * cascade: the linking rows deleted too; unlink: the id removed from their values), and the
   * edges of the deleted rows go.
   */
  async beforeDelete(tx: Db, rows: LinkRowWrites, table: TableDef, ids: string[], ctx: WriteContext): Promise<void> {
    if (ids.length === 0) return;
    let deleting = this.deleting.get(tx);
    if (!deleting) {
      deleting = new Set();
      this.deleting.set(tx, deleting);
    }
    for (const id of ids) deleting.add(`${table.id}:${id}`);
    // A writer linking to these rows holds them (FOR KEY SHARE) until it commits: its links are then seen below.
    if (this.database.dialect.lockRows) {
      for (const part of chunks([...ids].sort())) await tx.selectFrom(table.physical).select('id').where('id', 'in', part).orderBy('id').forUpdate().execute();
    }
    for (const { field, tableId } of table.incoming) {
      const edges = edgesOf(field);
      const linking = new Map<string, string[]>();
      for (const part of chunks(ids)) {
        for (const e of await tx.selectFrom(edges.table).select([edges.mine, edges.other]).where(edges.other, 'in', part).execute()) {
          const mine = e[edges.mine] as string;
          if (deleting.has(`${tableId}:${mine}`)) continue;
          linking.set(mine, [...(linking.get(mine) ?? []), e[edges.other] as string]);
        }
        const gone = await tx.deleteFrom(edges.table).where(edges.other, 'in', part).executeTakeFirst();
        this.edgesWritten(tx, edges.table, Number(gone.numDeletedRows));
      }
      if (linking.size === 0) continue;
      const source = tableId === table.id ? table : await this.tableOf(tx, tableId);
      const live = source.fields.find((f) => f.id === field.id) ?? field;
      const { onDelete } = linkOptions(live);
      if (onDelete === 'restrict') {
        const [row, targets] = linking.entries().next().value as [string, string[]];
        throw new ServiceError('in_use', `row ${targets[0]} is linked from row ${row} of table ${source.code ?? source.id} (field ${live.code}, onDelete restrict); unlink it first`, [
          { path: `${source.code ?? source.id}.${live.code}`, message: `row ${row} links to ${targets[0]}` },
        ]);
      }
      if (onDelete === 'cascade') {
        await rows.deleteMany(tx, source, [...linking.keys()].sort(), ctx);
        continue;
      }
      const column = fieldColumn(live.id);
      const multiple = linkOptions(live).multiple;
      for (const part of chunks([...linking.keys()].sort())) {
        const updates: { id: string; value: unknown }[] = [];
        let q = tx.selectFrom(source.physical).select(['id', column]).where('id', 'in', part).orderBy('id');
        if (this.database.dialect.lockRows) q = q.forNoKeyUpdate();
        for (const r of await q.execute()) {
          const gone = new Set(linking.get(r.id as string));
          const left = linkIds(decodeLink(r[column], this.database.dialect)).filter((x) => !gone.has(x));
          updates.push({ id: r.id as string, value: left.length === 0 ? null : multiple ? left : left[0] });
        }
        await rows.updateEach(tx, source, live, updates, ctx);
      }
    }
    for (const field of table.fields) {
      if (!isLinkField(field)) continue;
      const edges = edgesOf(field);
      for (const part of chunks(ids)) {
        const gone = await tx.deleteFrom(edges.table).where(edges.mine, 'in', part).executeTakeFirst();
        this.edgesWritten(tx, edges.table, Number(gone.numDeletedRows));
      }
    }
  }
}
