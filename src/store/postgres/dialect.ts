import { type SqlBool, sql } from 'kysely';
import { postgresLinkSql } from './link-statements.ts';
import type { ColumnKind, Dialect } from '../dialect.ts';
import { USER_TABLE_NAME, errCode, messageOf } from '../driver-errors.ts';
import { postgresRecordValues } from './record-values.ts';
import { postgresAggregates } from './aggregate-sql.ts';
import { changeNumbers } from '../../domain/row-columns.ts';

const postgresTypes: Record<ColumnKind, string> = {
  // Byte order, as SQLite's BINARY: sorts and keyset cursors agree on both databases whatever the server's locale.
  text: 'text collate "C"',
  real: 'double precision',
  integer: 'bigint',
  boolean: 'boolean',
  timestamp: 'timestamptz',
  date: 'date',
  time: 'time',
  json: 'jsonb',
};

/** A column kind's values as bound (text without the column's collation): the element type of an array that fills the column (change-numbering.ts). */
export const postgresBoundType = (kind: ColumnKind): string => (kind === 'text' ? 'text' : postgresTypes[kind]);

export const postgresDialect: Dialect = {
  name: 'postgres',
  label: 'postgres',
  recordValues: postgresRecordValues,
  aggregates: postgresAggregates,
  links: postgresLinkSql,
  columnType: (kind) => postgresTypes[kind],
  encodeBoolean: (v) => v,
  decodeBoolean: (v) => v === true,
  // node-postgres sends objects as JSON text itself, but arrays as PostgreSQL arrays: stringify both.
  encodeJson: (v) => JSON.stringify(v),
  decodeJson: (v) => (typeof v === 'string' ? JSON.parse(v) : v),
  isUniqueViolation: (err) => errCode(err) === '23505',
  isSchemaChanged: (err) => (errCode(err) === '42703' || errCode(err) === '42P01') && USER_TABLE_NAME.test(messageOf(err)),
  isTooManyColumns: (err) => errCode(err) === '54011',
  // deadlock_detected, serialization_failure.
  isRetryable: (err) => errCode(err) === '40P01' || errCode(err) === '40001',
  // A lock of the whole database's, released when the transaction ends.
  lockMigrations: async (tx) => {
    await sql`select pg_advisory_xact_lock(hashtext('rowhouse-migrate'))`.execute(tx);
  },
  tryLock: (name) => sql<boolean>`pg_try_advisory_xact_lock(hashtextextended(${name}, 0))`,
  canAlterNullability: true,
  lockRows: true,
  writingWith: true,
  // 256 characters are at most 1 KiB of UTF-8: with a 128-character id the entry stays well within a B-tree page's third.
  textKeyPrefix: 256,
  // PostgreSQL binds at most 65,535 parameters per statement.
  rowsPerInsert: (columns) => Math.max(1, Math.floor(30_000 / columns)),
  nullsFirstByDefault: (direction) => direction === 'desc',
  // The set as an array computed once (an InitPlan), whose size the planner does not guess from
  // the column's statistics: it then reads the rows by primary key (= ANY) and sorts them, where an
  // IN semi-join, expected to meet its first matches early, walked a list's sort order through
  // every row before them (2.2 s for a page of the 20,000 orders of one customer that lie last).
  inKeySet: (value, subquery) => sql<SqlBool>`${value} = any(array(${subquery}))`,
  listContains: (column, value) => sql<SqlBool>`${sql.ref(column)} @> ${JSON.stringify([value])}::jsonb`,
  jsonListWithin: (column, values) => sql<SqlBool>`${sql.ref(column)} <@ ${JSON.stringify(values)}::jsonb`,
  jsonTextAt: (column, path) => sql<string | null>`${sql.ref(column)} #>> ${[...path]}::text[]`,
  // Text columns are COLLATE "C", whose lower() folds ASCII only; the database's own collation folds every letter.
  lower: (expr) => sql<string>`lower(${expr} collate "default")`,
  nextTimestamp: (column, now) =>
    sql`case when ${sql.ref(column)} < ${now}::timestamptz then ${now}::timestamptz else ${sql.ref(column)} + interval '1 millisecond' end`,
  // A freshly inserted row version has no xmax; the one ON CONFLICT DO UPDATE writes carries the
  // row lock the upsert took, so its xmax is the writing transaction.
  upsertInserted: sql<boolean>`(xmax = 0)`,
  createChangeNumbers: async (tx, tableId) => {
    await sql`create sequence ${sql.id(changeNumbers(tableId))} as bigint`.execute(tx);
  },
  dropChangeNumbers: async (tx, tableId) => {
    await sql`drop sequence if exists ${sql.id(changeNumbers(tableId))}`.execute(tx);
  },
};
