import { CompiledQuery, sql } from 'kysely';
import { EventEmitter } from 'node:events';
import { recordJsonSql } from '../render/row-json-sql.ts';
import { type Database, type Db, afterCommit, beforeCommit, readRows } from './database.ts';
import type { Dialect } from './dialect.ts';
import type { Meta, MetaDb } from './meta-schema.ts';
import type { RawRow } from './rows.ts';
import type { TableDef } from './table-catalog.ts';

/**
 * The change log (issue "Change events", item 1): one entry per committed row create, update and
 * delete, written in the transaction that makes the change, so a rollback leaves none. Entries are
 * numbered per table: each transaction takes its numbers just before it commits, by raising the
 * table's counter row, whose lock it then holds until it commits. So numbers increase in commit
 * order, and a reader that has seen number n has seen every number below it that will ever
 * exist (on SQLite writes take turns anyway).
 */

export type ChangeType = 'create' | 'update' | 'delete';

/** A change as a write reports it; `row` is the row after it, as the database returns it (null for a delete). */
export interface RowChange {
  type: ChangeType;
  rowId: string;
  row: RawRow | null;
  /** The field codes an update wrote; null for a create or delete. */
  changedFields: string[] | null;
}

/**
 * What a single-row write outside any transaction did, for its entry (see ChangeLog.writeAlone).
 * `upsert`: PostgreSQL's one-statement upsert, whose row says whether it was `inserted`.
 */
export type LoneWrite = { type: 'create' } | { type: 'delete' } | { type: 'update' | 'upsert'; changedFields: string[] };

/** The change a write made to `row` (as RETURNING gave it: a delete's holds the id only). */
export function changeOf(what: LoneWrite, row: RawRow): RowChange {
  const rowId = row.id as string;
  if (what.type === 'delete') return { type: 'delete', rowId, row: null, changedFields: null };
  if (what.type === 'create' || row.inserted === true) return { type: 'create', rowId, row, changedFields: null };
  return { type: 'update', rowId, row, changedFields: what.changedFields };
}

/** Runs one statement on SQLite's main connection at once (Database.runNow). */
type RunNow = NonNullable<Database['runNow']>;

interface Pending {
  table: TableDef;
  memberId: string;
  occurredAt: string;
  changes: RowChange[];
}

/** Entries per insert statement (8 columns each, well within both databases' limits on bound values). */
const PER_STATEMENT = 500;
/**
 * A transaction holding this many entries of a table writes them at once rather than at its
 * commit, so a large one (an import of a million rows) keeps no more than this many in memory.
 * It then takes the table's numbers early, and holds the counter's lock for the rest of its life.
 */
const WRITE_AT = 5000;

// The statements every row write makes, as SQL text: built with the query builder they cost more
// than the write itself (a single-row create on SQLite: 1,286 against 4,095 req/s for the floor).
const ENTRY_COLUMNS = '"tableId", "sequence", "type", "rowId", "row", "changedFields", "occurredAt", "memberId"';
/** SQLite: the counter raised by n (first time: n), answering the last number taken. */
const TAKE_SQLITE = `insert into rh_change_counters ("tableId", "last", "purgedThrough") values (?, ?, 0)
  on conflict ("tableId") do update set "last" = "last" + ? returning "last"`;
/** SQLite: n entries, numbered by the caller. */
const entriesStatement = (n: number) => `insert into rh_changes (${ENTRY_COLUMNS}) values ${Array(n).fill('(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`;
/**
 * PostgreSQL: the counter raised and n entries written in one statement, one round trip. Binds
 * $1 table id, $2 n, $3 occurredAt, $4 member id, then each entry's type, row id, row, fields.
 */
function bothStatement(n: number): string {
  const values = Array.from({ length: n }, (_, k) => `(${k + 1}, $${5 + 4 * k}, $${6 + 4 * k}, $${7 + 4 * k}, $${8 + 4 * k})`).join(', ');
  return `with c as (
      insert into rh_change_counters ("tableId", "last", "purgedThrough") values ($1, $2::bigint, 0)
      on conflict ("tableId") do update set "last" = rh_change_counters."last" + $2::bigint
      returning "last")
    insert into rh_changes (${ENTRY_COLUMNS})
    select $1, c."last" - $2::bigint + v.k, v.type, v.row_id, v.row, v.changed, $3::timestamptz, $4
    from c, (values ${values}) as v(k, type, row_id, row, changed)`;
}

/**
 * SQLite: create entries for the rows of a table with rowids from the first to the last given,
 * numbered from their rowid plus an offset. Binds table id, that offset, occurredAt, member id,
 * the first rowid and the last.
 */
function insertedStatement(table: TableDef): string {
  return `insert into rh_changes (${ENTRY_COLUMNS})
    select ?, r.rowid + ?, 'create', r."id", ${recordJsonSql(table, 'r', 'sqlite')}, null, ?, ?
    from "${table.physical}" as r where r.rowid between ? and ? order by r.rowid`;
}

/**
 * PostgreSQL: a single-row write (`write`, returning every column of the row it wrote; $1… its own
 * parameters) and its entry in one statement. A WITH raises the counter only when the write
 * returned its row, holding its lock until the statement commits. Binds after the write's own:
 * table id, occurredAt, member id, and for an update or upsert the changed fields.
 */
function withEntry(write: string, params: number, what: LoneWrite, table: TableDef): string {
  const [id, at, member, fields] = [1, 2, 3, 4].map((k) => `$${params + k}`);
  const inserted = 'w."inserted"';
  const type = what.type === 'upsert' ? `case when ${inserted} then 'create' else 'update' end` : `'${what.type}'`;
  const changed = what.type === 'upsert' ? `case when ${inserted} then null else ${fields}::text end` : what.type === 'update' ? `${fields}::text` : 'null';
  const row = what.type === 'delete' ? 'null' : recordJsonSql(table, 'w', 'postgres');
  const counter = `insert into rh_change_counters ("tableId", "last", "purgedThrough")`;
  const raise = `on conflict ("tableId") do update set "last" = rh_change_counters."last" + excluded."last" returning "last"`;
  const entries = `insert into rh_changes (${ENTRY_COLUMNS})`;
  return `with w as (${write}),
    c as (${counter} select ${id}::text, 1, 0 from w ${raise}),
    e as (${entries} select ${id}::text, c."last", ${type}, w."id", ${row}, ${changed}, ${at}::timestamptz, ${member}::text from w, c)
    select * from w`;
}

export class ChangeLog {
  private readonly pending = new WeakMap<Db, Map<string, Pending>>();
  private readonly statements = new Map<string, string>();
  /** Each table version's statements that write entries from its rows (withEntry, insertedStatement), by key. */
  private readonly entryStatements = new WeakMap<TableDef, Map<string, string>>();
  /** Says `table id` when a commit has added entries of that table (the feed's long polls wait on it). */
  readonly committed = new EventEmitter();

  private readonly dialect: Dialect;

  constructor(
    private readonly database: Database,
    /** The row record's JSON text (render/row-json.ts), as the entry keeps it. */
    private readonly render: (table: TableDef, row: RawRow) => string,
  ) {
    this.dialect = database.dialect;
    this.committed.setMaxListeners(0);
  }

  /**
   * A single-row write outside any transaction (`write` returns the row's columns) made together
   * with its entry, atomically, with no transaction of its own: on PostgreSQL one statement, on
   * SQLite one transaction run at once. Answers the rows written (none: nothing matched, no entry).
   */
  async writeAlone(db: Db, table: TableDef, ctx: { memberId: string; now: string }, write: CompiledQuery, what: LoneWrite): Promise<RawRow[]> {
    if (db.isTransaction) throw new Error('ChangeLog.writeAlone: a write outside any transaction');
    let rows: RawRow[];
    if (this.dialect.writingWith) {
      rows = (await db.executeQuery<RawRow>(this.withEntry(table, ctx, write, what))).rows;
    } else {
      const { writeNow } = this.database;
      if (!writeNow) throw new Error('ChangeLog.writeAlone: the database can neither write with WITH nor write at once');
      rows = await writeNow((run) => {
        const written = run(write.sql, write.parameters);
        if (written.length > 0) this.writeEntriesNow(run, { table, memberId: ctx.memberId, occurredAt: ctx.now, changes: written.map((row) => changeOf(what, row)) });
        return written;
      });
    }
    if (rows.length > 0) this.committed.emit('table', table.id);
    return rows;
  }

  /**
   * SQLite, in the transaction `tx`: create entries for the rows just inserted into the table, found
   * by their rowids (`first` to `last`, one insert after another), rendered by SQLite from the rows
   * as stored and written by one INSERT … SELECT: none of them is made or sent in JavaScript. The
   * transaction's entries of the table noted before are written first.
   */
  insertedRows(tx: Db, table: TableDef, ctx: { memberId: string; now: string }, first: number, last: number): void {
    const { runNow } = this.database;
    if (this.dialect.writingWith || !runNow) throw new Error('ChangeLog.insertedRows: SQLite only');
    const pending = this.pendingOf(tx, table, ctx);
    this.writeEntriesNow(runNow, pending);
    pending.changes = [];
    const sequence = this.takeNow(runNow, table.id, last - first + 1);
    const text = this.tableStatement(table, 'inserted', () => insertedStatement(table));
    runNow(text, [table.id, sequence - first, ctx.now, ctx.memberId, first, last]);
  }

  /** PostgreSQL: `write` wrapped to write its entry too (withEntry), the statement's text made once per table version and prepared. */
  private withEntry(table: TableDef, ctx: { memberId: string; now: string }, write: CompiledQuery, what: LoneWrite): CompiledQuery {
    const text = this.tableStatement(table, `${what.type}\u0000${write.sql}`, () => {
      const made = withEntry(write.sql, write.parameters.length, what, table);
      this.database.prepare?.(made);
      return made;
    });
    const params = [...write.parameters, table.id, ctx.now, ctx.memberId];
    // The changed fields are bound only where the statement names them (PostgreSQL refuses a parameter it does not use).
    if (what.type === 'update' || what.type === 'upsert') params.push(JSON.stringify(what.changedFields));
    return CompiledQuery.raw(text, params);
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
    if (entry.changes.length >= WRITE_AT) {
      const early = entry.changes;
      entry.changes = [];
      await this.writeTable(tx, { ...entry, changes: early });
    }
  }

  /** Takes each table's numbers and writes its entries, tables in id order (so two writers never wait on each other in a cycle). */
  private async write(tx: Db, tables: Map<string, Pending>): Promise<void> {
    for (const id of [...tables.keys()].sort()) await this.writeTable(tx, tables.get(id) as Pending);
  }

  /** Writes a table's pending entries, a statement per PER_STATEMENT of them, each taking its numbers. */
  private async writeTable(tx: Db, pending: Pending): Promise<void> {
    if (!this.dialect.writingWith) {
      const { runNow } = this.database;
      if (!runNow) throw new Error('ChangeLog: SQLite without Database.runNow');
      this.writeEntriesNow(runNow, pending);
      return;
    }
    const { table, changes, memberId, occurredAt } = pending;
    for (let i = 0; i < changes.length; i += PER_STATEMENT) {
      const entries = changes.slice(i, i + PER_STATEMENT);
      const n = entries.length;
      // Each entry's type, row id, row and fields, in the order the statement binds them.
      const fields: unknown[] = [];
      for (const c of entries) fields.push(...this.entryFields(table, c));
      await tx.executeQuery(CompiledQuery.raw(this.statement(`both:${n}`, () => bothStatement(n)), [table.id, n, occurredAt, memberId, ...fields]));
    }
  }

  /** SQLite, at once on the connection of the open transaction: a table's entries, numbered, a statement per PER_STATEMENT of them. */
  private writeEntriesNow(run: RunNow, { table, changes, memberId, occurredAt }: Pending): void {
    for (let i = 0; i < changes.length; i += PER_STATEMENT) {
      const entries = changes.slice(i, i + PER_STATEMENT);
      const n = entries.length;
      const first = this.takeNow(run, table.id, n);
      const params: unknown[] = [];
      entries.forEach((c, k) => params.push(table.id, first + k, ...this.entryFields(table, c), occurredAt, memberId));
      run(this.statement(`entries:${n}`, () => entriesStatement(n)), params);
    }
  }

  /** SQLite: takes n numbers of the table's; answers the first. */
  private takeNow(run: RunNow, tableId: string, n: number): number {
    const [{ last }] = run(TAKE_SQLITE, [tableId, n, n]);
    return Number(last) - n + 1;
  }

  /** An entry's type, row id, row (its JSON text) and changed fields (theirs), as the statements bind them. */
  private entryFields(table: TableDef, c: RowChange): unknown[] {
    return [c.type, c.rowId, c.row === null ? null : this.render(table, c.row), c.changedFields === null ? null : JSON.stringify(c.changedFields)];
  }

  /** A statement of a table version's by key, made once (at most 200 kept per version: updates differ by the fields they set). */
  private tableStatement(table: TableDef, key: string, make: () => string): string {
    let statements = this.entryStatements.get(table);
    if (!statements) {
      statements = new Map();
      this.entryStatements.set(table, statements);
    }
    let text = statements.get(key);
    if (text === undefined) {
      text = make();
      if (statements.size > 200) statements.clear();
      statements.set(key, text);
    }
    return text;
  }

  /** A statement's SQL by key, made once. */
  private statement(key: string, make: () => string): string {
    let text = this.statements.get(key);
    if (text === undefined) {
      text = make();
      this.statements.set(key, text);
    }
    return text;
  }

  /** Raises the table's counter by `n` (locking its row until commit); answers the last number taken. */
  private async take(tx: MetaDb, tableId: string, n: number): Promise<number> {
    const row = await tx
      .insertInto('rh_change_counters')
      .values({ tableId, last: n, purgedThrough: 0 })
      .onConflict((oc) => oc.column('tableId').doUpdateSet({ last: sql`${sql.ref('rh_change_counters.last')} + ${n}` }))
      .returning('last')
      .executeTakeFirstOrThrow();
    return Number(row.last);
  }

  /**
   * A table being deleted: a delete entry for each of its rows, numbered in id order, made by one
   * statement in the deleting transaction.
   */
  async tableDeleted(tx: Db, table: { id: string; physical: string }, ctx: { memberId: string; now: string }): Promise<void> {
    const { count } = (await tx.selectFrom(table.physical).select(sql<number>`count(*)`.as('count')).executeTakeFirstOrThrow()) as { count: number };
    const n = Number(count);
    if (n === 0) return;
    const last = await this.take(tx as MetaDb, table.id, n);
    const occurredAt = this.dialect.name === 'postgres' ? sql`cast(${ctx.now} as timestamptz)` : sql`${ctx.now}`;
    await sql`insert into rh_changes ("tableId", "sequence", "type", "rowId", "row", "changedFields", "occurredAt", "memberId")
      select ${table.id}, cast(${last - n} as bigint) + row_number() over (order by id), 'delete', id, null, null, ${occurredAt}, ${ctx.memberId}
      from ${sql.table(table.physical)}`.execute(tx);
    afterCommit(tx, () => this.committed.emit('table', table.id));
  }

  /** Entries of a table after `after`, in order, as stored (their row and fields as JSON text). */
  async read(db: Db, tableId: string, after: number, limit: number): Promise<Meta['rh_changes'][]> {
    const query = (db as MetaDb).selectFrom('rh_changes').selectAll().where('tableId', '=', tableId).where('sequence', '>', after).orderBy('sequence').limit(limit).compile();
    return (await readRows(db, query)) as Meta['rh_changes'][];
  }

  /** The last number retention has deleted of a table's entries (0 when none). */
  async purgedThrough(db: Db, tableId: string): Promise<number> {
    const query = (db as MetaDb).selectFrom('rh_change_counters').select('purgedThrough').where('tableId', '=', tableId).compile();
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
    const tables = await db.selectFrom('rh_change_counters').select(['tableId', 'last', 'purgedThrough']).whereRef('last', '>', 'purgedThrough').execute();
    let deleted = 0;
    for (const { tableId, last, purgedThrough } of tables) {
      const oldest = await first(tableId, Number(purgedThrough) + 1);
      if (!oldest || Number(oldest.old) !== 1) continue;
      // The last old entry lies in [lo, hi): lo is old, hi is young (or past the last).
      let lo = Number(oldest.sequence);
      let hi = Number(last) + 1;
      while (hi - lo > 1) {
        const mid = Math.floor((lo + hi) / 2);
        const e = await first(tableId, mid);
        if (e && Number(e.sequence) < hi && Number(e.old) === 1) lo = Number(e.sequence);
        else hi = mid;
      }
      await db.transaction().execute(async (tx) => {
        const r = await tx.deleteFrom('rh_changes').where('tableId', '=', tableId).where('sequence', '<=', lo).executeTakeFirst();
        deleted += Number(r.numDeletedRows);
        await tx.updateTable('rh_change_counters').set({ purgedThrough: lo }).where('tableId', '=', tableId).where('purgedThrough', '<', lo).execute();
      });
    }
    return deleted;
  }
}
