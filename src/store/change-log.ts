import { type CompiledQuery, sql } from 'kysely';
import { EventEmitter } from 'node:events';
import { type Database, type Db, afterCommit, beforeCommit, readRows } from './database.ts';
import type { ChangeNumbering } from './dialect.ts';
import type { Meta, MetaDb } from './meta-schema.ts';
import type { TableDef } from '../domain/table.ts';
import { TableMemo } from '../domain/compiled-table.ts';
import type { RawRow } from '../domain/row.ts';
import type { AnswerWithWrite, EntryMaker, LoneWrite, PendingEntries, RowChange } from './change-entries.ts';
import { heldScope, savepointParticipant } from './transaction-hooks.ts';

/**
 * The change log (issue "Change events", item 1): one entry per committed row create, update and
 * delete, written in the transaction that makes the change, so a rollback leaves none. A reader
 * (the feed, the flows' planning) never passes over a number that may still commit: SQLite numbers
 * a table's entries from its counter row as each transaction commits (writes take turns);
 * PostgreSQL from the table's sequence, each writer holding a guard that stops readers below its
 * numbers until it ends (readableThrough). The design and its figures: docs/decisions.md, "Change log".
 *
 * The statements of each are the database's (ChangeNumbering: sqlite/change-numbering.ts,
 * postgres/change-numbering.ts and change-guards.ts); the algorithm over them is here.
 */

type Pending = PendingEntries;

/**
 * A transaction holding this many entries of a table writes them at once rather than at its
 * commit, so a large one (an import of a million rows) keeps no more than this many in memory.
 * It then takes the table's numbers early: readers of the table stop below them until it ends.
 */
const WRITE_AT = 5000;

/**
 * Up to `limit` of a table's entries numbered after `after` and up to `through`, in order (the
 * feed's pages, the flows' planning). The numbers just after `after` are asked for first, as many
 * as are wanted: numbers are dense but for those a failed transaction took, so that window mostly
 * holds the whole page. Only when it comes up short is the rest of the range asked for. Asked for
 * the whole range at once, PostgreSQL planned by the table's statistics, and on a log grown since
 * they were taken (the first minute of a bulk load) it expected a few rows: it fetched every entry
 * after `after` and sorted them for each page, 45 ms for a page 100,000 entries from the end (a
 * whole feed of 150,000 was read at 20,000 a second).
 */
export async function entriesAfter(db: MetaDb, tableId: string, after: number, through: number, limit: number): Promise<Meta['rh_changes'][]> {
  const range = async (from: number, upTo: number, most: number) => {
    const query = db
      .selectFrom('rh_changes')
      .selectAll()
      .where('tableId', '=', tableId)
      .where('sequence', '>', from)
      .where('sequence', '<=', upTo)
      .orderBy('sequence')
      .limit(most)
      .compile();
    return (await readRows(db, query)) as Meta['rh_changes'][];
  };
  const windowEnd = Math.min(through, after + limit);
  if (after >= windowEnd) return [];
  const first = await range(after, windowEnd, limit);
  if (first.length === limit || windowEnd >= through) return first;
  return first.concat(await range(windowEnd, through, limit - first.length));
}

/** The highest number among the table's entries kept (0: none). */
export async function lastNumber(db: MetaDb, tableId: string): Promise<number> {
  const newest = await db.selectFrom('rh_changes').select('sequence').where('tableId', '=', tableId).orderBy('sequence', 'desc').limit(1).executeTakeFirst();
  return newest ? Number(newest.sequence) : 0;
}

/** Each table version's statements that write entries from its rows (withEntry, insertedStatement), by key. */
const entryStatements = new TableMemo('change log entry statements, by key', () => new Map<string, string>());

export class ChangeLog implements EntryMaker {
  private readonly pending = new WeakMap<Db, Map<string, Pending>>();
  private readonly statements = new Map<string, string>();
  /** Says `table id` when a commit has added entries of that table (the feed's long polls wait on it). */
  readonly committed = new EventEmitter();

  private readonly numbering: ChangeNumbering;

  constructor(
    private readonly database: Database,
    /** The row record's JSON text (render/row-json.ts), as the entry keeps it. */
    private readonly render: (table: TableDef, row: RawRow) => string,
  ) {
    this.numbering = database.changeNumbering;
    this.committed.setMaxListeners(0);
  }

  /**
   * A single-row write outside any transaction (`write` returns the row's columns) made together
   * with its entry, atomically, with no transaction of its own: on PostgreSQL one statement, on
   * SQLite one transaction run at once (ChangeNumbering.writeAlone). Answers the rows written (none:
   * nothing matched, no entry). With `answer`, a create keeps its request's answer in the same step
   * (AnswerWithWrite), told once both have committed.
   */
  async writeAlone(db: Db, table: TableDef, ctx: { memberId: string; now: string }, write: CompiledQuery, what: LoneWrite, answer?: AnswerWithWrite): Promise<RawRow[]> {
    if (db.isTransaction) throw new Error('ChangeLog.writeAlone: a write outside any transaction');
    if (answer && what.type !== 'create') throw new Error("ChangeLog.writeAlone: an answer kept with a create's write only");
    const { rows } = await this.numbering.writeAlone(db, table, ctx, write, what, this, answer);
    if (!answer) {
      if (rows.length > 0) this.committed.emit('table', table.id);
      return rows;
    }
    if (what.type === 'create') answer.written(this.recordText(table, what.row));
    // Outside the request's scope: what the commit wakes (a worker that writes) is no part of it.
    if (rows.length > 0) heldScope.run(undefined, () => this.committed.emit('table', table.id));
    return rows;
  }

  /**
   * PostgreSQL, in the transaction `tx` with no entry of the table noted (pending): a single-row
   * write and its entry in one statement, as writeAlone makes them, its number taken now (entries
   * of the table noted later are numbered after it, at the commit); announced once committed. For
   * a request's held transaction (request-transaction.ts): one round trip fewer. Answers undefined
   * where it cannot: SQLite, or entries of the table noted.
   */
  async writeWithEntryIn(tx: Db, table: TableDef, ctx: { memberId: string; now: string }, write: CompiledQuery, what: LoneWrite): Promise<RawRow[] | undefined> {
    if (!this.database.dialect.writingWith || (this.pending.get(tx)?.get(table.id)?.changes.length ?? 0) > 0) return undefined;
    const { rows } = await this.numbering.writeAlone(tx, table, ctx, write, what, this);
    if (rows.length > 0) afterCommit(tx, () => this.committed.emit('table', table.id));
    return rows;
  }

  /**
   * SQLite, in the transaction `tx`: create entries for the rows just inserted into the table, found
   * by their rowids (`first` to `last`, one insert after another), rendered by SQLite from the rows
   * as stored and written by one INSERT … SELECT: none of them is made or sent in JavaScript, but
   * the system fields every one shares (new rows of `ctx`, RowStore.newRow). The transaction's
   * entries of the table noted before are written first.
   */
  insertedRows(tx: Db, table: TableDef, ctx: { memberId: string; now: string }, first: number, last: number): void {
    this.numbering.insertedRows(tx, this.pendingOf(tx, table, ctx), ctx, first, last, this);
  }

  /**
   * PostgreSQL, in the transaction `tx`: new rows of the table (each as RowStore.newRow makes them,
   * for `ctx`) inserted with their create entries in one statement (insertedWithEntries): none of
   * them is rendered or sent by JavaScript, but the system fields every one shares. The
   * transaction's entries of the table noted before are written first, so numbers follow the
   * order of the operations.
   */
  async insertWithEntries(tx: Db, table: TableDef, ctx: { memberId: string; now: string }, rows: readonly (readonly unknown[])[]): Promise<void> {
    if (!tx.isTransaction) throw new Error('ChangeLog.insertWithEntries: PostgreSQL, in a transaction');
    await this.writeNoted(tx, this.pendingOf(tx, table, ctx));
    await this.numbering.insertWithEntries(tx, table, ctx, rows, this);
  }

  /**
   * In the transaction `tx`: `update` (rows of the table updated; on PostgreSQL returning every
   * column and `rh_k`, the row's place in `ids`) run with each row's update entry naming
   * `changedFields`, rendered by the database from the rows as updated and numbered in the order of
   * `ids` (ChangeNumbering.updateWithEntries): none is rendered or sent by JavaScript. The
   * transaction's entries of the table noted before are written first. Answers the rows updated.
   */
  async updateWithEntries(tx: Db, table: TableDef, ctx: { memberId: string; now: string }, update: CompiledQuery, ids: readonly string[], changedFields: readonly string[]): Promise<number> {
    if (!tx.isTransaction) throw new Error('ChangeLog.updateWithEntries: in a transaction');
    await this.writeNoted(tx, this.pendingOf(tx, table, ctx));
    return this.numbering.updateWithEntries(tx, table, ctx, update, ids, changedFields, this);
  }

  /** The transaction's pending entries of the table, made on first use with the hooks that write them before it commits and announce them after. */
  private pendingOf(tx: Db, table: TableDef, ctx: { memberId: string; now: string }): Pending {
    let byTable = this.pending.get(tx);
    if (!byTable) {
      const tables = new Map<string, Pending>();
      byTable = tables;
      this.pending.set(tx, tables);
      beforeCommit(tx, () => this.write(tx, tables));
      afterCommit(tx, () => {
        for (const id of tables.keys()) this.committed.emit('table', id);
      });
      // A savepoint rolled back (request-transaction.ts) takes its changes' entries with it.
      savepointParticipant(tx, {
        snapshot: () => {
          const kept = new Map([...tables].map(([id, p]) => [id, p.changes.slice()]));
          return () => {
            for (const [id, p] of tables) {
              const changes = kept.get(id);
              if (changes) p.changes = changes;
              else tables.delete(id);
            }
          };
        },
        discard: () => this.pending.delete(tx),
      });
    }
    let entry = byTable.get(table.id);
    if (!entry) {
      entry = { table, memberId: ctx.memberId, occurredAt: ctx.now, changes: [] };
      byTable.set(table.id, entry);
    }
    return entry;
  }

  /** Notes changes made in the transaction `tx`; they are written just before it commits (or sooner: WRITE_AT). */
  async record(tx: Db, table: TableDef, ctx: { memberId: string; now: string }, changes: RowChange[]): Promise<void> {
    if (changes.length === 0) return;
    const entry = this.pendingOf(tx, table, ctx);
    for (const c of changes) entry.changes.push(c);
    if (entry.changes.length >= WRITE_AT) await this.writeNoted(tx, entry);
  }

  /** Writes the table's entries noted so far now, before its commit, and forgets them. */
  private async writeNoted(tx: Db, pending: Pending): Promise<void> {
    if (pending.changes.length === 0) return;
    const noted = pending.changes;
    pending.changes = [];
    await this.writeTable(tx, { ...pending, changes: noted });
  }

  /** Takes each table's numbers and writes its entries, tables in id order (so two writers never wait on each other in a cycle). */
  private async write(tx: Db, tables: Map<string, Pending>): Promise<void> {
    for (const id of [...tables.keys()].sort()) await this.writeTable(tx, tables.get(id) as Pending);
  }

  /** Writes a table's pending entries, a statement per PER_STATEMENT of them, each taking its numbers. */
  private async writeTable(tx: Db, pending: Pending): Promise<void> {
    await this.numbering.writeEntries(tx, pending, this);
  }

  /** An entry's type, row id, row (its JSON text) and changed fields (theirs), as the statements bind them. */
  entryFields(table: TableDef, c: RowChange): unknown[] {
    return [c.type, c.rowId, c.row === null ? null : this.recordText(table, c.row), c.changedFields === null ? null : JSON.stringify(c.changedFields)];
  }

  /** Records rendered, by row: a create keeping its answer asks for its record more than once (its entry's, its answer's). */
  private readonly rendered = new WeakMap<RawRow, string>();

  /** A row's record as an entry keeps it. */
  recordText(table: TableDef, row: RawRow): string {
    let text = this.rendered.get(row);
    if (text === undefined) {
      text = this.render(table, row);
      this.rendered.set(row, text);
    }
    return text;
  }

  /** A statement of a table version's by key, made once (at most 200 kept per version: updates differ by the fields they set). */
  tableStatement(table: TableDef, key: string, make: () => string): string {
    const statements = table.compiled.memo(entryStatements);
    let text = statements.get(key);
    if (text === undefined) {
      text = make();
      if (statements.size > 200) statements.clear();
      statements.set(key, text);
    }
    return text;
  }

  /** A statement's SQL by key, made once. */
  statement(key: string, make: () => string): string {
    let text = this.statements.get(key);
    if (text === undefined) {
      text = make();
      this.statements.set(key, text);
    }
    return text;
  }

  /**
   * A table being deleted: a delete entry for each of its rows, numbered in id order, made by one
   * statement in the deleting transaction.
   */
  async tableDeleted(tx: Db, table: { id: string; physical: string }, ctx: { memberId: string; now: string }): Promise<void> {
    if (!(await this.numbering.tableDeleted(tx, table, ctx))) return;
    afterCommit(tx, () => this.committed.emit('table', table.id));
  }

  /** Entries of a table after `after`, in order, as stored (their row and fields as JSON text), up to the last a reader may pass. */
  async read(db: Db, tableId: string, after: number, limit: number): Promise<Meta['rh_changes'][]> {
    return entriesAfter(db, tableId, after, await this.numbering.readableThrough(db, tableId), limit);
  }

  /**
   * Where a reader that wants only what commits from now on starts (a change stream opened without
   * a cursor): the last number it may pass, no higher than the last entry kept, so that an entry
   * still to commit below the last one is not passed over.
   */
  async startingPoint(db: MetaDb, tableId: string): Promise<number> {
    return Math.min(await lastNumber(db, tableId), await this.numbering.readableThrough(db, tableId));
  }

  /** The last number of the table's entries a reader may pass now (PostgreSQL: below every entry still to commit). */
  readableThrough(db: MetaDb, tableId: string): Promise<number> {
    return this.numbering.readableThrough(db, tableId);
  }

  /** The last number retention has deleted of a table's entries (0 when none). */
  async purgedThrough(db: MetaDb, tableId: string): Promise<number> {
    const query = db.selectFrom('rh_change_counters').select('purgedThrough').where('tableId', '=', tableId).compile();
    const [row] = await readRows(db, query);
    return row ? Number(row.purgedThrough) : 0;
  }

  /**
   * Deletes each table's entries up to the last that occurred before `cutoff`, remembering how far
   * it went. Entries are found by number, not by time (no index on occurredAt, which every write
   * would pay for): the oldest kept entry of each table is looked at, and where it is older than
   * the cutoff, the last older one is found by halving the range of numbers. Times rise with
   * numbers, up to the length of a transaction (its entries take the time it began): an entry a
   * little younger than the cutoff may go with older ones, and is then behind `purgedThrough`,
   * where no cursor reads it (a cursor behind it answers 410).
   */
  async purge(db: MetaDb, cutoff: string): Promise<number> {
    const old = sql<number>`case when "occurredAt" < ${cutoff} then 1 else 0 end`;
    /** The first entry of the table numbered `from` or above, and whether it is older than the cutoff. */
    const first = async (tableId: string, from: number) =>
      db.selectFrom('rh_changes').select(['sequence', old.as('old')]).where('tableId', '=', tableId).where('sequence', '>=', from).orderBy('sequence').limit(1).executeTakeFirst();
    // The tables with entries, found along the key's index one table to the next (not by reading every entry).
    const { rows: tables } = await sql<{ tableId: string }>`with recursive t(id) as (
        select min("tableId") from rh_changes
        union all
        select (select min(e."tableId") from rh_changes e where e."tableId" > t.id) from t where t.id is not null)
      select id as "tableId" from t where id is not null`.execute(db);
    let deleted = 0;
    for (const { tableId } of tables) {
      const oldest = await first(tableId, (await this.purgedThrough(db, tableId)) + 1);
      if (!oldest || Number(oldest.old) !== 1) continue;
      // Up to the last entry a reader may pass: one still to commit below it must not be left behind purgedThrough.
      const last = await this.startingPoint(db, tableId);
      // The last old entry lies in [lo, hi): lo is old, hi is young (or past the last).
      let lo = Number(oldest.sequence);
      let hi = last + 1;
      if (lo >= hi) continue;
      while (hi - lo > 1) {
        const mid = Math.floor((lo + hi) / 2);
        const e = await first(tableId, mid);
        if (e && Number(e.sequence) < hi && Number(e.old) === 1) lo = Number(e.sequence);
        else hi = mid;
      }
      await db.transaction().execute(async (tx) => {
        const r = await tx.deleteFrom('rh_changes').where('tableId', '=', tableId).where('sequence', '<=', lo).executeTakeFirst();
        deleted += Number(r.numDeletedRows);
        // On PostgreSQL a table's counter row holds only this (its entries are numbered by the sequence).
        await tx
          .insertInto('rh_change_counters')
          .values({ tableId, last: lo, purgedThrough: lo })
          .onConflict((oc) => oc.column('tableId').doUpdateSet({ purgedThrough: lo }).where('rh_change_counters.purgedThrough', '<', lo))
          .execute();
      });
    }
    return deleted;
  }
}
