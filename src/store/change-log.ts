import { CompiledQuery, sql } from 'kysely';
import { EventEmitter } from 'node:events';
import { changeNumbers } from '../domain/row-columns.ts';
import { newRowSystemJson } from '../render/row-json.ts';
import { recordJsonSql } from '../render/row-json-sql.ts';
import { type Database, type Db, afterCommit, beforeCommit, readRows } from './database.ts';
import type { Dialect } from './dialect.ts';
import type { Meta, MetaDb } from './meta-schema.ts';
import type { TableDef } from '../domain/table.ts';
import { TableMemo } from '../domain/compiled-table.ts';
import type { RawRow } from '../domain/row.ts';

/**
 * The change log (issue "Change events", item 1): one entry per committed row create, update and
 * delete, written in the transaction that makes the change, so a rollback leaves none. A reader
 * (the feed, the flows' planning) never passes over a number that may still commit:
 *
 * - SQLite: entries are numbered per table, each transaction taking its numbers from the table's
 *   counter row; writes take turns, so numbers increase in commit order.
 * - PostgreSQL: entries take their numbers from the table's sequence (row-columns.ts
 *   changeNumbers), without a lock that other writers wait on: so a number may commit after a
 *   higher one. Before it takes a number, a transaction holds a shared advisory lock (its guard)
 *   naming the table and a bound no higher than the numbers it will take, until it ends. A reader
 *   notes the last number handed out, then the guards held, and only then reads: numbers up to the
 *   last noted and below every guard of the table are final (readableThrough). A per-table counter
 *   row locked until commit, as on SQLite, made every writer of a table wait for the one before to
 *   commit (docs/decisions.md has the figures).
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
  const rowId = row.id;
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
 * It then takes the table's numbers early: readers of the table stop below them until it ends.
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
/** A guard's key: GUARD_BASE, the table's 20 bits times 2^41, and the bound modulo 2^41. */
const GUARD_BASE = 2n ** 62n;
const BOUND_SPAN = 2 ** 41;

/** The 20 bits of a table's id (a UUID) its guards are named by; tables that share them only read more cautiously. */
function tableBits(tableId: string): number {
  return parseInt(tableId.replace(/-/g, '').slice(0, 5), 16) || 0;
}

/**
 * PostgreSQL: a CTE taking the transaction's guard on the table (its bits bound at `bits`), with
 * the last number its sequence handed out as the bound: the numbers taken after are higher.
 */
const guardCte = (tableId: string, bits: string) =>
  `g as (select pg_advisory_xact_lock_shared(${GUARD_BASE}::bigint + ${bits}::bigint * ${BOUND_SPAN} + s.last_value % ${BOUND_SPAN}) as held from "${changeNumbers(tableId)}" s)`;

/**
 * PostgreSQL: n entries of the table written in one statement, numbered in order after the guard
 * is held. Binds $1 table id, $2 the table's bits, $3 occurredAt, $4 member id, then each entry's
 * type, row id, row, fields. (PostgreSQL computes nextval after the sort, so in the entries' order.)
 */
function bothStatement(tableId: string, n: number): string {
  const values = Array.from({ length: n }, (_, k) => `(${k + 1}, $${5 + 4 * k}, $${6 + 4 * k}, $${7 + 4 * k}, $${8 + 4 * k})`).join(', ');
  return `with ${guardCte(tableId, '$2')}
    insert into rh_changes (${ENTRY_COLUMNS})
    select $1, nextval('"${changeNumbers(tableId)}"'), v.type, v.row_id, v.row, v.changed, $3::timestamptz, $4
    from g, (values ${values}) as v(k, type, row_id, row, changed) order by v.k`;
}

/**
 * PostgreSQL: a multi-row insert (`insert`, returning every column; $1… its own parameters) and
 * its rows' create entries in one statement, numbered in the order the rows were written after the
 * guard is held, the records rendered by the database. Binds after the insert's own: table id, the
 * table's bits, occurredAt, member id, the records' system fields (newRowSystemJson).
 */
function insertedWithEntries(table: TableDef, insert: string, params: number): string {
  const [id, bits, at, member, system] = [1, 2, 3, 4, 5].map((k) => `$${params + k}`);
  return `with w as (${insert}),
    ${guardCte(table.id, bits)},
    e as (insert into rh_changes (${ENTRY_COLUMNS})
      select ${id}::text, nextval('"${changeNumbers(table.id)}"'), 'create', w."id", ${recordJsonSql(table, 'w', 'postgres', `${system}::text`)}, null, ${at}::timestamptz, ${member}::text
      from g, w)
    select count(*) as written from w`;
}

/**
 * SQLite: create entries for the rows of a table with rowids from the first to the last given,
 * numbered from their rowid plus an offset. Binds table id, that offset, the records' system fields
 * (newRowSystemJson), occurredAt, member id, the first rowid and the last.
 */
function insertedStatement(table: TableDef): string {
  return `insert into rh_changes (${ENTRY_COLUMNS})
    select ?, r.rowid + ?, 'create', r."id", ${recordJsonSql(table, 'r', 'sqlite', '?')}, null, ?, ?
    from "${table.physical}" as r where r.rowid between ? and ? order by r.rowid`;
}

/**
 * PostgreSQL: a single-row write (`write`, returning every column of the row it wrote; $1… its own
 * parameters) and its entry in one statement. Its number is taken only when the write returned its
 * row, after the guard is held (the number's CTE reads the guard's). Binds after the write's own:
 * table id, the table's bits, occurredAt, member id, and for an update or upsert the changed fields.
 */
function withEntry(write: string, params: number, what: LoneWrite, table: TableDef): string {
  const [id, bits, at, member, fields] = [1, 2, 3, 4, 5].map((k) => `$${params + k}`);
  const inserted = 'w."inserted"';
  const type = what.type === 'upsert' ? `case when ${inserted} then 'create' else 'update' end` : `'${what.type}'`;
  const changed = what.type === 'upsert' ? `case when ${inserted} then null else ${fields}::text end` : what.type === 'update' ? `${fields}::text` : 'null';
  const row = what.type === 'delete' ? 'null' : recordJsonSql(table, 'w', 'postgres');
  const entries = `insert into rh_changes (${ENTRY_COLUMNS})`;
  return `with w as (${write}),
    ${guardCte(table.id, bits)},
    n as (select nextval('"${changeNumbers(table.id)}"') as number from w, g),
    e as (${entries} select ${id}::text, n.number, ${type}, w."id", ${row}, ${changed}, ${at}::timestamptz, ${member}::text from w, n)
    select * from w`;
}

/**
 * The highest number of the table's entries a reader may pass: no entry numbered up to it will
 * commit later. PostgreSQL: the last number handed out is noted first, then the guards held, and
 * the caller reads after both (a later statement: a snapshot of its own). A guard's bound,
 * modulo 2^41, lies behind that last number, or ahead of it (a writer that began after: its
 * numbers are higher). SQLite: every number taken has committed or rolled back.
 */
export async function readableThrough(db: Db, dialect: Dialect, tableId: string): Promise<number> {
  if (dialect.name !== 'postgres') return Number.MAX_SAFE_INTEGER;
  const numbers = `"${changeNumbers(tableId)}"`;
  // null when none was handed out yet; a table deleted has no sequence, and no entry still to come.
  const [{ last, gone }] = await readRows(db, CompiledQuery.raw('select pg_sequence_last_value(to_regclass($1)) as last, to_regclass($1) is null as gone', [numbers]));
  if (gone) return Number.MAX_SAFE_INTEGER;
  const handed = last === null ? 0 : Number(last);
  const guards = await readRows(
    db,
    CompiledQuery.raw(
      `select (k - ${GUARD_BASE}) % ${BOUND_SPAN} as bound from (
         -- Other advisory keys (a migration's is negative) would overflow the arithmetic: left out first.
         select case when classid::bigint between 1073741824 and 2147483647 then classid::bigint * 4294967296 + objid::bigint end as k
         from pg_locks where locktype = 'advisory' and objsubid = 1) l
       where k >= ${GUARD_BASE} and (k - ${GUARD_BASE}) / ${BOUND_SPAN} = $1`,
      [tableBits(tableId)],
    ),
  );
  let through = handed;
  for (const { bound } of guards) {
    const behind = ((((handed % BOUND_SPAN) - Number(bound)) % BOUND_SPAN) + BOUND_SPAN) % BOUND_SPAN;
    // Its numbers lie above its bound (or at it: a sequence not called yet starts there).
    if (behind < BOUND_SPAN / 2) through = Math.min(through, handed - behind - 1);
  }
  return through;
}

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
export async function entriesAfter(db: Db, tableId: string, after: number, through: number, limit: number): Promise<Meta['rh_changes'][]> {
  const range = async (from: number, upTo: number, most: number) => {
    const query = (db as MetaDb)
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

export class ChangeLog {
  private readonly pending = new WeakMap<Db, Map<string, Pending>>();
  private readonly statements = new Map<string, string>();
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
        const written = run(write.sql, write.parameters) as RawRow[];
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
   * as stored and written by one INSERT … SELECT: none of them is made or sent in JavaScript, but
   * the system fields every one shares (new rows of `ctx`, RowStore.newRow). The transaction's
   * entries of the table noted before are written first.
   */
  insertedRows(tx: Db, table: TableDef, ctx: { memberId: string; now: string }, first: number, last: number): void {
    const { runNow } = this.database;
    if (this.dialect.writingWith || !runNow) throw new Error('ChangeLog.insertedRows: SQLite only');
    const pending = this.pendingOf(tx, table, ctx);
    this.writeEntriesNow(runNow, pending);
    pending.changes = [];
    const sequence = this.takeNow(runNow, table.id, last - first + 1);
    const text = this.tableStatement(table, 'inserted', () => insertedStatement(table));
    runNow(text, [table.id, sequence - first, newRowSystemJson(ctx), ctx.now, ctx.memberId, first, last]);
  }

  /**
   * PostgreSQL, in the transaction `tx`: `insert` (a multi-row insert of `n` rows, returning every
   * column) run with its rows' create entries in one statement (insertedWithEntries): none of them
   * is rendered or sent by JavaScript, but the system fields every one shares (new rows of `ctx`,
   * RowStore.newRow). The transaction's entries of the table noted before are written first, so
   * numbers follow the order of the operations.
   */
  async insertWithEntries(tx: Db, table: TableDef, ctx: { memberId: string; now: string }, insert: CompiledQuery, n: number): Promise<void> {
    if (!this.dialect.writingWith || !tx.isTransaction) throw new Error('ChangeLog.insertWithEntries: PostgreSQL, in a transaction');
    await this.writeNoted(tx, this.pendingOf(tx, table, ctx));
    const text = this.tableStatement(table, `inserted:${n}`, () => insertedWithEntries(table, insert.sql, insert.parameters.length));
    await tx.executeQuery(CompiledQuery.raw(text, [...insert.parameters, table.id, tableBits(table.id), ctx.now, ctx.memberId, newRowSystemJson(ctx)]));
  }

  /** PostgreSQL: `write` wrapped to write its entry too (withEntry), the statement's text made once per table version and prepared. */
  private withEntry(table: TableDef, ctx: { memberId: string; now: string }, write: CompiledQuery, what: LoneWrite): CompiledQuery {
    const text = this.tableStatement(table, `${what.type}\u0000${write.sql}`, () => {
      const made = withEntry(write.sql, write.parameters.length, what, table);
      this.database.prepare?.(made);
      return made;
    });
    const params = [...write.parameters, table.id, tableBits(table.id), ctx.now, ctx.memberId];
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
      const text = this.tableStatement(table, `both:${n}`, () => bothStatement(table.id, n));
      await tx.executeQuery(CompiledQuery.raw(text, [table.id, tableBits(table.id), occurredAt, memberId, ...fields]));
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
  private statement(key: string, make: () => string): string {
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
    const rows = sql.table(table.physical);
    const columns = sql.raw(ENTRY_COLUMNS);
    if (this.dialect.name === 'postgres') {
      await sql`with ${sql.raw(guardCte(table.id, String(tableBits(table.id))))}
        insert into rh_changes (${columns})
        select ${table.id}, nextval(${`"${changeNumbers(table.id)}"`}), 'delete', r.id, null, null, cast(${ctx.now} as timestamptz), ${ctx.memberId}
        from g, ${rows} as r order by r.id`.execute(tx);
    } else {
      const { count } = (await tx.selectFrom(table.physical).select(sql<number>`count(*)`.as('count')).executeTakeFirstOrThrow()) as { count: number };
      const n = Number(count);
      if (n === 0) return;
      const { runNow } = this.database;
      if (!runNow) throw new Error('ChangeLog: SQLite without Database.runNow');
      const first = this.takeNow(runNow, table.id, n);
      await sql`insert into rh_changes (${columns})
        select ${table.id}, cast(${first - 1} as bigint) + row_number() over (order by id), 'delete', id, null, null, ${ctx.now}, ${ctx.memberId}
        from ${rows}`.execute(tx);
    }
    afterCommit(tx, () => this.committed.emit('table', table.id));
  }

  /** Entries of a table after `after`, in order, as stored (their row and fields as JSON text), up to the last a reader may pass. */
  async read(db: Db, tableId: string, after: number, limit: number): Promise<Meta['rh_changes'][]> {
    return entriesAfter(db, tableId, after, await readableThrough(db, this.dialect, tableId), limit);
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
      const last = Math.min(await lastNumber(db, tableId), await readableThrough(db, this.dialect, tableId));
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
