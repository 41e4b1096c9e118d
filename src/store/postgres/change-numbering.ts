import { CompiledQuery, sql } from 'kysely';
import { SYSTEM_ORDER, changeNumbers } from '../../domain/row-columns.ts';
import { newRowSystemJson } from '../../domain/record-system-json.ts';
import type { TableDef } from '../../domain/table.ts';
import { TableMemo } from '../../domain/compiled-table.ts';
import type { RawRow } from '../../domain/row.ts';
import { type AnswerWithWrite, ENTRY_COLUMNS, type EntryMaker, type LoneWrite, PER_STATEMENT } from '../change-entries.ts';
import type { ChangeNumbering, EntryContext } from '../dialect.ts';
import { recordJsonSql } from '../record-json-sql.ts';
import { rowFromRecord, rowFromRecordFits } from '../record-row.ts';
import { guardCte, readableThrough, tableBits } from './change-guards.ts';
import { postgresBoundType, postgresDialect } from './dialect.ts';

/**
 * PostgreSQL's change numbering: entries take their numbers from the table's sequence
 * (row-columns.ts changeNumbers), each statement holding its guard first (change-guards.ts), and
 * are written by the statement that writes the rows where it can (a WITH may hold an INSERT …
 * RETURNING: two writes in one statement, one round trip).
 */

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
 * PostgreSQL: new rows of the table inserted from one array per column (unnest), returning every
 * column, and their create entries in the same statement, numbered in the order of the arrays
 * after the guard is held, the records rendered by the database. Binds $1 the rows' ids (text[]),
 * $2 the time they were made (and updated) at, $3 the member who made them, $4… each field's
 * values (an array of its column's type, in the order of the fields), then the table id, the
 * table's bits and the records' system fields (newRowSystemJson). One text per table version,
 * whatever the number of rows, so it is prepared: a multi-row VALUES list bound every value as a
 * parameter of its own (14,000 for 1,000 rows of nine fields) and was parsed and planned anew
 * for each statement (docs/decisions.md, "Write path per request").
 */
function insertedWithEntries(table: TableDef): string {
  const { columns, fields } = table.compiled;
  const after = 3 + fields.length;
  const [id, bits, system] = [1, 2, 3].map((k) => `$${after + k}`);
  // The system columns first, in SYSTEM_ORDER (RowStore.newRow fills them so): id, made at, updated at, by, updated by.
  const from = ['u.id', '$2::timestamptz', '$2::timestamptz', '$3::text', '$3::text', ...fields.map((_, k) => `u.f${k}`)];
  const arrays = ['$1::text[]', ...fields.map((f, k) => `$${4 + k}::${postgresBoundType(f.type.column)}[]`)];
  const names = ['id', ...fields.map((_, k) => `f${k}`)];
  const list = columns.map((c) => `"${c}"`).join(', ');
  return `with w as (insert into "${table.physical}" (${list})
      select ${from.join(', ')} from unnest(${arrays.join(', ')}) with ordinality as u(${names.join(', ')}, k) order by u.k
      returning ${list}),
    ${guardCte(table.id, bits)},
    e as (insert into rh_changes (${ENTRY_COLUMNS})
      select ${id}::text, nextval('"${changeNumbers(table.id)}"'), 'create', w."id", ${recordJsonSql(table, 'w', postgresDialect, `${system}::text`)}, null, $2::timestamptz, $3::text
      from g, w)
    select count(*) as written from w`;
}

/**
 * PostgreSQL: an update of many rows (`update`, returning every column and `rh_k`, each row's place
 * in the order given; $1… its own parameters) and their update entries in one statement, numbered
 * in that order after the guard is held, the records rendered by the database. Binds after the
 * update's own: table id, the table's bits, occurredAt, member id, the changed fields (JSON).
 */
function updatedWithEntries(table: TableDef, update: string, params: number): string {
  const [id, bits, at, member, fields] = [1, 2, 3, 4, 5].map((k) => `$${params + k}`);
  return `with w as (${update}),
    ${guardCte(table.id, bits)},
    e as (insert into rh_changes (${ENTRY_COLUMNS})
      select ${id}::text, nextval('"${changeNumbers(table.id)}"'), 'update', w."id", ${recordJsonSql(table, 'w', postgresDialect)}, ${fields}::text, ${at}::timestamptz, ${member}::text
      from g, w order by w.rh_k)
    select count(*) as written from w`;
}

/**
 * PostgreSQL: a single-row write (`write`, returning every column of the row it wrote, or a
 * create's and a delete's only its id; $1… its own parameters) and its entry in one statement. Its
 * number is taken only when the write returned its row, after the guard is held (the number's CTE
 * reads the guard's). Binds after the write's own: table id, the table's bits, occurredAt, member
 * id, and for an update or upsert the changed fields, for a create its record (rendered as the
 * answer is: the database need not render it, nor return the row). With `answer` (a create's), the
 * request's answer is inserted by the same statement, its body that record, its own values bound
 * last: a record of its key fails the insert, and the whole statement with it.
 *
 * An update of a table whose rows can be made from their records (record-row.ts) returns only the
 * record the entry keeps (`rh_record`), rendered once for both: not the row's columns, which the
 * database would write out and node-postgres parse one by one (docs/decisions.md, "Write path per
 * request", the patch on PostgreSQL).
 */
function withEntry(write: string, params: number, what: LoneWrite, table: TableDef, answer?: AnswerWithWrite): string {
  const [id, bits, at, member, fields] = [1, 2, 3, 4, 5].map((k) => `$${params + k}`);
  const inserted = 'w."inserted"';
  const type = what.type === 'upsert' ? `case when ${inserted} then 'create' else 'update' end` : `'${what.type}'`;
  const changed = what.type === 'upsert' ? `case when ${inserted} then null else ${fields}::text end` : what.type === 'update' ? `${fields}::text` : 'null';
  const row = what.type === 'delete' ? 'null' : what.type === 'create' ? `${fields}::text` : recordJsonSql(table, 'w', postgresDialect);
  const entries = `insert into rh_changes (${ENTRY_COLUMNS})`;
  const kept = answer && what.type === 'create' ? `k as (${answer.sql((i) => `$${params + 6 + i}`, fields)}),\n    ` : '';
  if (recordAnswers(what, table)) {
    return `with w as (${write}),
    ${guardCte(table.id, bits)},
    n as (select nextval('"${changeNumbers(table.id)}"') as number from w, g),
    r as (select w."id", ${row} as rh_record from w),
    e as (${entries} select ${id}::text, n.number, 'update', r."id", r.rh_record, ${changed}, ${at}::timestamptz, ${member}::text from r, n)
    select r.rh_record from r`;
  }
  return `with ${kept}w as (${write}),
    ${guardCte(table.id, bits)},
    n as (select nextval('"${changeNumbers(table.id)}"') as number from w, g),
    e as (${entries} select ${id}::text, n.number, ${type}, w."id", ${row}, ${changed}, ${at}::timestamptz, ${member}::text from w, n)
    select * from w`;
}

/** Whether the statement of `what` (withEntry) returns the row's record alone (`rh_record`), rather than its columns. */
const recordAnswers = (what: LoneWrite, table: TableDef) => what.type === 'update' && rowFromRecordFits(table);

/** Each table version's single-row statements with their entries (withEntry), by the kind of write and the write's own text. */
const lonely = new TableMemo('single-row writes with their change entries, by kind and statement', () => new Map<string, Map<string, string>>());

/** `write` wrapped to write its entry too (withEntry), and `answer`, the statement's text made once per table version and prepared. */
function writeWithEntry(log: EntryMaker, prepare: (text: string) => void, table: TableDef, ctx: EntryContext, write: CompiledQuery, what: LoneWrite, answer?: AnswerWithWrite): CompiledQuery {
  // Found by the write's text as it is (a string made once: its hash is kept), not by a key joined anew for every write.
  const byKind = table.compiled.memo(lonely);
  const kind = answer ? `${what.type}:answer` : what.type;
  let texts = byKind.get(kind);
  if (!texts) byKind.set(kind, (texts = new Map()));
  let text = texts.get(write.sql);
  if (text === undefined) {
    text = withEntry(write.sql, write.parameters.length, what, table, answer);
    prepare(text);
    // Updates differ by the fields they set: at most 200 kept per kind and version.
    if (texts.size >= 200) texts.clear();
    texts.set(write.sql, text);
  }
  const params = [...write.parameters, table.id, tableBits(table.id), ctx.now, ctx.memberId];
  // Bound only where the statement names them (PostgreSQL refuses a parameter it does not use).
  if (what.type === 'update' || what.type === 'upsert') params.push(JSON.stringify(what.changedFields));
  else if (what.type === 'create') params.push(log.recordText(table, what.row), ...(answer?.parameters ?? []));
  return CompiledQuery.raw(text, params);
}

/** `prepare` makes a statement a named prepared one (prepared-statements.ts). */
export function postgresChangeNumbering(prepare: (text: string) => void): ChangeNumbering {
  return {
    // One statement: the write and its entry (withEntry).
    writeAlone: (db, table, ctx, write, what, log, answer) => {
      const query = writeWithEntry(log, prepare, table, ctx, write, what, answer);
      if (!recordAnswers(what, table)) return db.executeQuery<RawRow>(query);
      // The row made from its record (record-row.ts), as the statement returns nothing else.
      return db.executeQuery<{ rh_record: string }>(query).then(({ rows }) => ({ rows: rows.map((r) => rowFromRecord(table, r.rh_record, postgresDialect)) }));
    },
    async writeEntries(tx, { table, changes, memberId, occurredAt }, log) {
      for (let i = 0; i < changes.length; i += PER_STATEMENT) {
        const entries = changes.slice(i, i + PER_STATEMENT);
        const n = entries.length;
        // Each entry's type, row id, row and fields, in the order the statement binds them.
        const fields: unknown[] = [];
        for (const c of entries) fields.push(...log.entryFields(table, c));
        const text = log.tableStatement(table, `both:${n}`, () => bothStatement(table.id, n));
        await tx.executeQuery(CompiledQuery.raw(text, [table.id, tableBits(table.id), occurredAt, memberId, ...fields]));
      }
    },
    insertedRows: () => {
      throw new Error('ChangeLog.insertedRows: SQLite only');
    },
    async insertWithEntries(tx, table, ctx, rows, log) {
      const text = log.tableStatement(table, 'inserted', () => insertedWithEntries(table));
      // One text per table version: planned once per connection.
      prepare(text);
      const width = table.compiled.columns.length;
      // The rows' ids, then each field's column (RowStore.newRow: the system columns first, the same for every row).
      const params: unknown[] = [rows.map((r) => r[0]), ctx.now, ctx.memberId];
      for (let k = SYSTEM_ORDER.length; k < width; k++) params.push(rows.map((r) => r[k]));
      params.push(table.id, tableBits(table.id), newRowSystemJson(ctx));
      await tx.executeQuery(CompiledQuery.raw(text, params));
    },
    async updateWithEntries(tx, table, ctx, update, _ids, changedFields, log) {
      const text = log.tableStatement(table, `updated:${update.sql}`, () => updatedWithEntries(table, update.sql, update.parameters.length));
      // One text per table version and field: planned once per connection.
      prepare(text);
      const { rows } = await tx.executeQuery<{ written: number }>(
        CompiledQuery.raw(text, [...update.parameters, table.id, tableBits(table.id), ctx.now, ctx.memberId, JSON.stringify(changedFields)]),
      );
      return Number(rows[0]?.written ?? 0);
    },
    readableThrough,
    async tableDeleted(tx, table, ctx) {
      await sql`with ${sql.raw(guardCte(table.id, String(tableBits(table.id))))}
        insert into rh_changes (${sql.raw(ENTRY_COLUMNS)})
        select ${table.id}, nextval(${`"${changeNumbers(table.id)}"`}), 'delete', r.id, null, null, cast(${ctx.now} as timestamptz), ${ctx.memberId}
        from g, ${sql.table(table.physical)} as r order by r.id`.execute(tx);
      return true;
    },
  };
}
