import { ROW_ID } from '../../domain/codes.ts';
import { ServiceError, invalid } from '../../domain/errors.ts';
import type { FieldDef } from '../../domain/field-types/field-type.ts';
import { type EdgeSide, edgesOf, isLinkField, linkIds, linkOptions } from '../../domain/field-types/link.ts';
import type { TableDef } from '../../domain/table.ts';
import { type Database, type Db, afterCommit } from '../database.ts';
import type { WriteContext } from '../resources/resource-spec.ts';
import type { TableCatalog } from '../table-catalog.ts';
import { type RawBuilder, sql } from 'kysely';
import { listParams, listStatement } from './list-statements.ts';

/**
 * Links kept whole on every write (CONTRACT §11): the ids a write names exist (locked against a
 * concurrent delete on PostgreSQL until it commits), the edges follow the values, the other side
 * of a pair follows (an update, with its change entry, of each row whose inverse value changed),
 * and deleting rows applies each link's onDelete to the rows linking to them. RowStore calls it
 * inside the write's transaction (its tables' writes always run in one: RowStore.needsTransaction).
 */

/**
 * Of one row whose link field follows the other side of a pair (or an unlink): the ids to remove
 * from its value, and those to append. `mayHold`: the value may hold some of them already (the
 * row wrote that field itself in the same request); elsewhere the edges say none is there.
 */
export interface LinkFollow {
  id: string;
  add: readonly string[];
  drop: readonly string[];
  mayHold: boolean;
}

/** What a link maintenance asks of the row store: the other side's rows updated and cascaded deletes, without coming back here for what it already did. */
export interface LinkRowWrites {
  /** One link field of many rows followed, each row with its change entry: set-based (RowStore.followLinks). */
  followLinks(db: Db, table: TableDef, field: FieldDef, items: readonly LinkFollow[], ctx: WriteContext): Promise<void>;
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
    const memo = this.catalog.peek(this.database.db, id);
    if (memo) return memo;
    const table = await this.catalog.find(tx, id);
    if (!table) throw new ServiceError('schema_changed', `table ${id} changed while the request ran; send it again`);
    // Requests name tables by code, so a link's target (looked up by id) was never in the memo, and
    // every write read its version anew in the transaction (on PostgreSQL a round trip per bulk):
    // once this one has let its connection go, the memo is filled by id for the next (where the
    // memo is usable at all: not while PostgreSQL's metadata listener is down).
    afterCommit(tx, () => {
      if (this.database.metadataVersion() === undefined) return;
      void (async () => this.catalog.find(this.database.db, id))().catch(() => {});
    });
    return table;
  }

  /** Edge rows written: counted for the planner's statistics once they are committed (an edge table is analysed as a user table is). */
  private edgesWritten(tx: Db, edges: string, n: number): void {
    if (n > 0) afterCommit(tx, () => this.database.statistics.noteWrites(edges, n));
  }

  /**
   * The ids among `ids` that are rows of `table`, in one statement per 1,000 (the ids bound as one
   * list), locked on PostgreSQL in id order until this transaction ends: `share` (FOR KEY SHARE)
   * so that none is deleted, `update` (FOR NO KEY UPDATE) for rows this transaction then rewrites,
   * so that no concurrent writer rewrites them from a value read before this one's write (and two
   * such writers never wait on each other in a cycle). The statement answers how many it found:
   * a bulk's 1,000 found ids are not sent back, read and kept row by row to be looked up again.
   * Only when some are missing (a write about to fail) does a second statement say which (locking
   * what it finds as the first did, so its answer holds whatever changed in between).
   */
  private async existing(tx: Db, table: TableDef, ids: Iterable<string>, lock: 'share' | 'update'): Promise<Set<string>> {
    const sorted = [...new Set(ids)].filter((id) => ROW_ID.test(id)).sort();
    const found = new Set<string>();
    if (sorted.length === 0) return found;
    const { dialect } = this.database;
    const rows = sql.table(table.physical);
    const locking = !dialect.lockRows ? sql`` : lock === 'update' ? sql` for no key update of rh_t` : sql` for key share of rh_t`;
    const list = (arg: (i: number) => RawBuilder<unknown>) => dialect.links.listRows(listParams(this.database, arg, 1), ['rh_id']);
    const counted = listStatement(this.database, table, `found:${lock}`, (arg) => sql`select count(*) as rh_n from (select rh_t.id from ${rows} as rh_t
        where rh_t.id in (select rh_id from ${list(arg)}) order by rh_t.id${locking}) as rh_found`);
    const missing = listStatement(this.database, table, `missing:${lock}`, (arg) => sql`with rh_ids as (select rh_id from ${list(arg)}),
        rh_found as (select rh_t.id from ${rows} as rh_t where rh_t.id in (select rh_id from rh_ids) order by rh_t.id${locking})
        select rh_id from rh_ids where rh_id not in (select id from rh_found)`);
    for (const part of chunks(sorted)) {
      const bound = dialect.links.bindList([part]);
      const [{ rh_n }] = (await tx.executeQuery<{ rh_n: number | string | bigint }>(counted.with(bound))).rows;
      if (Number(rh_n) === part.length) {
        for (const id of part) found.add(id);
        continue;
      }
      const absent = new Set((await tx.executeQuery<{ rh_id: string }>(missing.with(bound))).rows.map((r) => r.rh_id));
      for (const id of part) if (!absent.has(id)) found.add(id);
    }
    return found;
  }

  /** The edges of a link field, one statement per 1,000 rows: those of the rows `mine` names (`mine` its own rows, `other` the rows they link to: EdgeSide), or inserted, or deleted. */
  private async edgesBy(tx: Db, table: TableDef, field: FieldDef, edges: EdgeSide, side: 'mine' | 'other', ids: string[]): Promise<{ mine: string; other: string }[]> {
    const { dialect } = this.database;
    const by = edges[side];
    const t = listStatement(this.database, table, `edges:${field.id}:${side}`, (arg) => {
      const list = dialect.links.listRows(listParams(this.database, arg, 1), ['rh_id']);
      return sql`select ${sql.ref(edges.mine)} as rh_mine, ${sql.ref(edges.other)} as rh_other from ${sql.table(edges.table)}
        where ${sql.ref(by)} in (select rh_id from ${list}) order by ${sql.ref(by)}, ${sql.ref(side === 'mine' ? edges.other : edges.mine)}`;
    });
    const out: { mine: string; other: string }[] = [];
    for (const part of chunks(ids)) {
      for (const e of (await tx.executeQuery<{ rh_mine: string; rh_other: string }>(t.with(dialect.links.bindList([part])))).rows) out.push({ mine: e.rh_mine, other: e.rh_other });
    }
    return out;
  }

  /** Inserts (`insert`) or deletes edges of a link field, one statement per 1,000. */
  private async changeEdges(tx: Db, table: TableDef, field: FieldDef, edges: EdgeSide, change: 'insert' | 'delete', pairs: { mine: string; other: string }[]): Promise<void> {
    if (pairs.length === 0) return;
    const { dialect } = this.database;
    const t = listStatement(this.database, table, `edges:${field.id}:${change}`, (arg) => {
      const list = dialect.links.listRows(listParams(this.database, arg, 2), ['rh_mine', 'rh_other']);
      const [mine, other] = [sql.ref(edges.mine), sql.ref(edges.other)];
      return change === 'insert'
        ? sql`insert into ${sql.table(edges.table)} (${mine}, ${other}) select rh_mine, rh_other from ${list}`
        : sql`delete from ${sql.table(edges.table)} where (${mine}, ${other}) in (select rh_mine, rh_other from ${list})`;
    });
    for (const part of chunks(pairs)) {
      await tx.executeQuery(t.with(dialect.links.bindList([part.map((e) => e.mine), part.map((e) => e.other)])));
    }
    this.edgesWritten(tx, edges.table, pairs.length);
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
      if (writes.length > 0) await this.fieldWritten(tx, rows, table, field, writes, items, ctx, at);
    }
  }

  private async fieldWritten(
    tx: Db,
    rows: LinkRowWrites,
    table: TableDef,
    field: FieldDef,
    writes: { k: number; item: WrittenRow; ids: string[] }[],
    items: readonly WrittenRow[],
    ctx: WriteContext,
    at: (k: number, err: ServiceError) => unknown,
  ): Promise<void> {
    const options = linkOptions(field);
    const target = options.table === table.id ? table : await this.tableOf(tx, options.table);
    const edges = edgesOf(field);
    // The links the rows had: none for a new row.
    const before = new Map<string, Set<string>>();
    const old = writes.filter((w) => !w.item.created).map((w) => w.item.id);
    for (const e of await this.edgesBy(tx, table, field, edges, 'mine', old)) {
      const set = before.get(e.mine) ?? new Set<string>();
      set.add(e.other);
      before.set(e.mine, set);
    }
    /** For the other side of a pair: per target row, the rows that now link to it, and those that no longer do, in order. */
    const added = new Map<string, string[]>();
    const removed = new Map<string, string[]>();
    const toInsert: { mine: string; other: string }[] = [];
    const toDelete: { mine: string; other: string }[] = [];
    for (const { item, ids } of writes) {
      // A new row had no links (the common case of a bulk create: no sets made per row).
      const had = before.get(item.id);
      for (const id of ids) {
        if (had?.has(id)) continue;
        toInsert.push({ mine: item.id, other: id });
        const list = added.get(id);
        if (list) list.push(item.id);
        else added.set(id, [item.id]);
      }
      if (!had) continue;
      const now = new Set(ids);
      for (const id of had) {
        if (now.has(id)) continue;
        toDelete.push({ mine: item.id, other: id });
        const list = removed.get(id);
        if (list) list.push(item.id);
        else removed.set(id, [item.id]);
      }
    }
    // Every id written names a row of the target, held until the commit. Of a pair, the rows whose
    // value follows are locked for that write by the same statement (FOR NO KEY UPDATE, in id order).
    const paired = options.inverseField !== undefined;
    const touched = paired ? new Set([...added.keys(), ...removed.keys()]) : new Set<string>();
    const found = paired ? await this.existing(tx, target, touched, 'update') : new Set<string>();
    const others = writes.flatMap((w) => w.ids).filter((id) => !touched.has(id));
    for (const id of await this.existing(tx, target, others, 'share')) found.add(id);
    for (const { k, ids } of writes) {
      const missing = ids.find((id) => !found.has(id));
      if (missing !== undefined) {
        throw at(k, invalid([{ path: `values.${field.code}`, message: `no row ${missing} in table ${target.code ?? target.id}` }], 'Invalid link'));
      }
    }
    await this.changeEdges(tx, table, field, edges, 'delete', toDelete);
    await this.changeEdges(tx, table, field, edges, 'insert', toInsert);
    if (!paired) return;
    const partner = target.fields.find((f) => f.id === options.inverseField);
    if (!partner) throw new ServiceError('schema_changed', `table ${target.id} changed while the request ran; send it again`);
    if (!linkOptions(partner).multiple) await this.singleSideHolds(tx, table, field, edges, partner, added, writes, at);
    // The other field of the pair follows on every target row whose links changed: appended in
    // order, removed where gone, by the database from the value the row holds (RowStore.followLinks).
    // Rows of the same table that wrote the other field themselves may hold ids added here already.
    const holding = new Set(target.id === table.id ? items.filter((item) => [...item.values.keys()].some((f) => f.id === partner.id)).map((item) => item.id) : []);
    const follow = [...touched].sort().flatMap((id) => (found.has(id) ? [{ id, add: added.get(id) ?? [], drop: removed.get(id) ?? [], mayHold: holding.has(id) }] : []));
    await rows.followLinks(tx, target, partner, follow, ctx);
  }

  /**
   * A single side of a pair links to at most one row: a second link is refused (409), never moved
   * silently. The refusal is placed (`at`) on the row written that made the second link (of two
   * written together, the later one), naming the field written, the row linked and the one it
   * already links to.
   */
  private async singleSideHolds(
    tx: Db,
    table: TableDef,
    field: FieldDef,
    edges: EdgeSide,
    partner: FieldDef,
    added: ReadonlyMap<string, string[]>,
    writes: readonly { k: number; item: WrittenRow; ids: string[] }[],
    at: (k: number, err: ServiceError) => unknown,
  ): Promise<void> {
    const seen = new Map<string, string>();
    for (const e of await this.edgesBy(tx, table, field, edges, 'other', [...added.keys()].sort())) {
      const first = seen.get(e.other);
      if (first !== undefined) {
        // The rows that link to it now (`added`: in the order written) and were written so.
        const linkedNow = added.get(e.other) ?? [];
        const rows = [first, e.mine].filter((id) => linkedNow.includes(id));
        const culprit = writes.filter((w) => rows.includes(w.item.id)).at(-1);
        const other = culprit && culprit.item.id === e.mine ? first : e.mine;
        const err = new ServiceError('in_use', `row ${e.other} already links to row ${other} in field ${partner.code}, which holds one link; unlink it there first`, [
          { path: `values.${field.code}`, message: `row ${e.other} already links to row ${other} in field ${partner.code}` },
        ]);
        throw culprit ? at(culprit.k, err) : err;
      }
      seen.set(e.other, e.mine);
    }
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
      // The linking rows locked in id order, then each written without the ids deleted (RowStore.followLinks).
      const present = await this.existing(tx, source, linking.keys(), 'update');
      const follow = [...linking.keys()].sort().flatMap((id) => (present.has(id) ? [{ id, add: [], drop: linking.get(id) as string[], mayHold: false }] : []));
      await rows.followLinks(tx, source, live, follow, ctx);
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
