import { sql } from 'kysely';
import { newRowSystemJson } from '../../domain/record-system-json.ts';
import type { TableDef } from '../../domain/table.ts';
import type { RawRow } from '../../domain/row.ts';
import { ENTRY_COLUMNS, type EntryMaker, PER_STATEMENT, type PendingEntries, changeOf } from '../change-entries.ts';
import type { ChangeNumbering } from '../dialect.ts';
import { recordJsonSql } from '../record-json-sql.ts';
import type { Run, WriteNow } from './group-commit.ts';
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

/** Takes n numbers of the table's; answers the first. */
function takeNow(run: Run, tableId: string, n: number): number {
  const [{ last }] = run(TAKE_SQLITE, [tableId, n, n]);
  return Number(last) - n + 1;
}

/** At once on the connection of the open transaction: a table's entries, numbered, a statement per PER_STATEMENT of them. */
function writeEntriesNow(run: Run, { table, changes, memberId, occurredAt }: PendingEntries, log: EntryMaker): void {
  for (let i = 0; i < changes.length; i += PER_STATEMENT) {
    const entries = changes.slice(i, i + PER_STATEMENT);
    const n = entries.length;
    const first = takeNow(run, table.id, n);
    const params: unknown[] = [];
    entries.forEach((c, k) => params.push(table.id, first + k, ...log.entryFields(table, c), occurredAt, memberId));
    run(log.statement(`entries:${n}`, () => entriesStatement(n)), params);
  }
}

/** `runNow` runs a statement at once on the main connection; `writeNow` runs work in the group commit (group-commit.ts). */
export function sqliteChangeNumbering(runNow: Run, writeNow: WriteNow): ChangeNumbering {
  return {
    // One savepoint of the group commit (writeNow): the answer kept (a record of its key fails it: nothing further runs), the write, its entry.
    writeAlone: (_db, table, ctx, write, what, log, answer) =>
      writeNow((run) => {
        if (answer && what.type === 'create') run(log.statement('kept answer', () => answer.sql(() => '?', '?')), [...answer.parameters, log.recordText(table, what.row)]);
        // The write returns its row's columns (a delete's: the id only): a row of the table.
        const written = run(write.sql, write.parameters) as RawRow[];
        if (written.length > 0) writeEntriesNow(run, { table, memberId: ctx.memberId, occurredAt: ctx.now, changes: written.map((row) => changeOf(what, row)) }, log);
        return { rows: written };
      }),
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
