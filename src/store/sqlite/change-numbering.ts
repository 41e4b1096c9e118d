import { sql } from 'kysely';
import { newRowSystemJson } from '../../domain/record-system-json.ts';
import type { TableDef } from '../../domain/table.ts';
import type { RawRow } from '../../domain/row.ts';
import { ENTRY_COLUMNS, type EntryMaker, PER_STATEMENT, type PendingEntries, type RowChange, changeOf } from '../change-entries.ts';
import type { ChangeNumbering } from '../dialect.ts';
import { recordJsonSql } from '../record-json-sql.ts';
import type { Run, WriteGroup, WriteNow } from './group-commit.ts';
import { sqliteDialect } from './dialect.ts';

/**
 * SQLite's change numbering: entries are numbered per table, each transaction taking its numbers
 * from the table's counter row; writes take turns, so numbers increase in commit order, and every
 * number taken has committed or rolled back (a reader may read them all).
 */

/** SQLite: the counter raised by n (first time: n), answering the last number taken. */
const TAKE_SQLITE = `insert into rh_change_counters ("tableId", "last", "purgedThrough") values (?, ?, 0)
  on conflict ("tableId") do update set "last" = "last" + ? returning "last"`;
/** SQLite: n entries, numbered by the caller. */
const entriesStatement = (n: number) => `insert into rh_changes (${ENTRY_COLUMNS}) values ${Array(n).fill('(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`;

/**
 * SQLite: create entries for the rows of a table with rowids from the first to the last given,
 * numbered from their rowid plus an offset. Binds table id, that offset, the records' system fields
 * (newRowSystemJson), occurredAt, member id, the first rowid and the last.
 */
function insertedStatement(table: TableDef): string {
  return `insert into rh_changes (${ENTRY_COLUMNS})
    select ?, r.rowid + ?, 'create', r."id", ${recordJsonSql(table, 'r', sqliteDialect, '?')}, null, ?, ?
    from "${table.physical}" as r where r.rowid between ? and ? order by r.rowid`;
}

/**
 * SQLite: update entries for rows of a table, found by id in the order of a JSON array of ids,
 * numbered from an offset by that order. Binds table id, the offset, the changed fields (JSON),
 * occurredAt, member id, the ids.
 */
function updatedStatement(table: TableDef): string {
  return `insert into rh_changes (${ENTRY_COLUMNS})
    select ?, ? + row_number() over (order by g.key), 'update', r."id", ${recordJsonSql(table, 'r', sqliteDialect)}, ?, ?, ?
    from json_each(?) as g join "${table.physical}" as r on r."id" = g.value order by g.key`;
}

/** Takes n numbers of the table's; answers the first. */
function takeNow(run: Run, tableId: string, n: number): number {
  const [{ last }] = run(TAKE_SQLITE, [tableId, n, n]);
  return Number(last) - n + 1;
}

/** A change to write as an entry, with when and by whom (the writes of one group commit each have their own). */
interface Noted {
  change: RowChange;
  occurredAt: string;
  memberId: string;
}

/** At once on the connection of the open transaction: a table's entries, numbered, a statement per PER_STATEMENT of them. */
function writeNotedNow(run: Run, table: TableDef, noted: readonly Noted[], log: EntryMaker): void {
  for (let i = 0; i < noted.length; i += PER_STATEMENT) {
    const entries = noted.slice(i, i + PER_STATEMENT);
    const n = entries.length;
    const first = takeNow(run, table.id, n);
    const params: unknown[] = [];
    entries.forEach(({ change, occurredAt, memberId }, k) => params.push(table.id, first + k, ...log.entryFields(table, change), occurredAt, memberId));
    run(log.statement(`entries:${n}`, () => entriesStatement(n)), params);
  }
}

/** writeNotedNow for a transaction's pending entries of a table (one time and member for all). */
function writeEntriesNow(run: Run, { table, changes, memberId, occurredAt }: PendingEntries, log: EntryMaker): void {
  writeNotedNow(run, table, changes.map((change) => ({ change, occurredAt, memberId })), log);
}

/** The entries the single-row writes of a group commit noted, by table: written together just before it commits. */
const groupEntries = new WeakMap<WriteGroup, Map<string, { table: TableDef; noted: Noted[] }>>();

/**
 * Notes a single-row write's entries in its group commit. The group writes the entries of all its
 * writes just before it commits, a table's in the order its writes ran, with one raise of the
 * table's counter (rather than a raise and an insert for each write, in a savepoint of its own).
 */
function noteInGroup(group: WriteGroup, table: TableDef, noted: Noted[], log: EntryMaker): void {
  let byTable = groupEntries.get(group);
  if (!byTable) {
    const tables = new Map<string, { table: TableDef; noted: Noted[] }>();
    byTable = tables;
    groupEntries.set(group, tables);
    group.beforeCommit((run) => {
      for (const id of [...tables.keys()].sort()) {
        const { table: t, noted: entries } = tables.get(id) as { table: TableDef; noted: Noted[] };
        writeNotedNow(run, t, entries, log);
      }
    });
  }
  const mine = byTable.get(table.id);
  if (mine) mine.noted.push(...noted);
  else byTable.set(table.id, { table, noted });
}

/** `runNow` runs a statement at once on the main connection; `writeNow` runs work in the group commit (group-commit.ts). */
export function sqliteChangeNumbering(runNow: Run, writeNow: WriteNow): ChangeNumbering {
  return {
    // In the group commit (writeNow): the answer kept, if any (a record of its key fails it: nothing
    // further runs), then the write, at once; its entry with those of its group, before the group
    // commits. A write alone is one statement and needs no savepoint; with its kept answer, two,
    // and no savepoint either: when the write's statement fails (SQLite backs it out), the record
    // just inserted is deleted again (Undo; a statement where a savepoint and its release are two).
    writeAlone: (_db, table, ctx, write, what, log, answer) => {
      const kept = what.type === 'create' && answer ? { answer, record: log.recordText(table, what.row) } : undefined;
      /** How far the work got: nothing, the kept record inserted, the write made too. */
      let reached: 'nothing' | 'kept' | 'written' = 'nothing';
      const work = (run: Run, group: WriteGroup) => {
        if (kept) {
          run(log.statement('kept answer', () => kept.answer.sql(() => '?', '?')), [...kept.answer.parameters, kept.record]);
          reached = 'kept';
        }
        // The write returns its row's columns (a delete's: the id only): a row of the table.
        const written = run(write.sql, write.parameters) as RawRow[];
        reached = 'written';
        if (written.length > 0) noteInGroup(group, table, written.map((row) => ({ change: changeOf(what, row), occurredAt: ctx.now, memberId: ctx.memberId })), log);
        return { rows: written };
      };
      if (!kept) return writeNow(work, true);
      return writeNow(work, {
        undo(run) {
          if (reached === 'written') throw new Error('writeAlone: a create and its kept answer failed after both were written');
          if (reached === 'kept') run(log.statement('forget kept answer', () => kept.answer.forget(() => '?')), kept.answer.forgetParameters);
        },
      });
    },
    writeEntries: async (_tx, pending, log) => writeEntriesNow(runNow, pending, log),
    /**
     * Create entries for the rows just inserted into the table, found by their rowids (`first` to
     * `last`, one insert after another), rendered by SQLite from the rows as stored and written by
     * one INSERT … SELECT: none of them is made or sent in JavaScript, but the system fields every
     * one shares (new rows of `ctx`, RowStore.newRow).
     */
    insertedRows(_tx, pending, ctx, first, last, log) {
      // The transaction's entries of the table noted before are written first.
      writeEntriesNow(runNow, pending, log);
      pending.changes = [];
      const { table } = pending;
      const sequence = takeNow(runNow, table.id, last - first + 1);
      const text = log.tableStatement(table, 'inserted', () => insertedStatement(table));
      runNow(text, [table.id, sequence - first, newRowSystemJson(ctx), ctx.now, ctx.memberId, first, last]);
    },
    /**
     * The update run at once on the main connection, then its rows' entries rendered by SQLite
     * from the rows as stored and written by one INSERT … SELECT, none made in JavaScript.
     */
    async updateWithEntries(_tx, table, ctx, update, ids, changedFields, log) {
      runNow(update.sql, update.parameters);
      const [{ n }] = runNow('select changes() as n', []);
      const updated = Number(n);
      if (updated === 0) return 0;
      const first = takeNow(runNow, table.id, updated);
      const text = log.tableStatement(table, 'updated', () => updatedStatement(table));
      runNow(text, [table.id, first - 1, JSON.stringify(changedFields), ctx.now, ctx.memberId, JSON.stringify(ids)]);
      return updated;
    },
    insertWithEntries: async () => {
      throw new Error('ChangeLog.insertWithEntries: PostgreSQL, in a transaction');
    },
    // Every number taken has committed or rolled back.
    readableThrough: async () => Number.MAX_SAFE_INTEGER,
    async tableDeleted(tx, table, ctx) {
      const rows = sql.table(table.physical);
      const { count } = (await tx.selectFrom(table.physical).select(sql<number>`count(*)`.as('count')).executeTakeFirstOrThrow()) as { count: number };
      const n = Number(count);
      if (n === 0) return false;
      const first = takeNow(runNow, table.id, n);
      await sql`insert into rh_changes (${sql.raw(ENTRY_COLUMNS)})
        select ${table.id}, cast(${first - 1} as bigint) + row_number() over (order by id), 'delete', id, null, null, ${ctx.now}, ${ctx.memberId}
        from ${rows}`.execute(tx);
      return true;
    },
  };
}
