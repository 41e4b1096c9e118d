import { type SqlBool, sql } from 'kysely';
import { sqliteLinkSql } from './link-statements.ts';
import type { ColumnKind, Dialect } from '../dialect.ts';
import { USER_TABLE_NAME, errCode, messageOf } from '../driver-errors.ts';
import { sqliteRecordValues } from './record-values.ts';
import { sqliteAggregates } from './aggregate-sql.ts';

/** The column type of each kind: SQLite keeps dates, times and JSON as the API writes them, as text. */
const sqliteTypes: Record<ColumnKind, string> = {
  text: 'TEXT',
  real: 'REAL',
  integer: 'INTEGER',
  boolean: 'INTEGER',
  timestamp: 'TEXT',
  date: 'TEXT',
  time: 'TEXT',
  json: 'TEXT',
};

export const sqliteDialect: Dialect = {
  name: 'sqlite',
  label: 'sqlite',
  recordValues: sqliteRecordValues,
  aggregates: sqliteAggregates,
  links: sqliteLinkSql,
  columnType: (kind) => sqliteTypes[kind],
  encodeBoolean: (v) => (v ? 1 : 0),
  decodeBoolean: (v) => v === 1 || v === 1n || v === true,
  encodeJson: (v) => JSON.stringify(v),
  decodeJson: (v) => (typeof v === 'string' ? JSON.parse(v) : v),
  isUniqueViolation: (err) => {
    const code = errCode(err);
    return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
  },
  // An insert naming a dropped column: "table … has no column named …"; other statements: "no such column: …".
  isSchemaChanged: (err) => errCode(err) === 'SQLITE_ERROR' && /no such (column|table)|has no column named/.test(messageOf(err)) && USER_TABLE_NAME.test(messageOf(err)),
  isTooManyColumns: (err) => errCode(err) === 'SQLITE_ERROR' && /too many columns/.test(messageOf(err)),
  // One write transaction at a time, each taking the lock as it begins (BEGIN IMMEDIATE, sqlite/connection.ts):
  // none is given up for another, and a migration's transaction already keeps other instances waiting.
  isRetryable: () => false,
  lockMigrations: async () => {},
  tryLock: () => null,
  canAlterNullability: false,
  lockRows: false,
  writingWith: false,
  textKeyPrefix: null,
  rowsPerInsert: () => 1,
  nullsFirstByDefault: (direction) => direction === 'asc',
  // SQLite's planner starts from the set when its statistics say the set is small.
  inKeySet: (value, subquery) => sql<SqlBool>`${value} in (${subquery})`,
  listContains(column, value) {
    const element = sql`select 1 from json_each(${sql.ref(column)}) as e`;
    if (typeof value === 'boolean') return sql<SqlBool>`exists (${element} where e.type = ${value ? 'true' : 'false'})`;
    if (typeof value === 'number') return sql<SqlBool>`exists (${element} where e.type in ('integer', 'real') and e.value = ${value})`;
    return sql<SqlBool>`exists (${element} where e.type = 'text' and e.value = ${value})`;
  },
  jsonListWithin: (column, values) =>
    sql<SqlBool>`not exists (select 1 from json_each(${sql.ref(column)}) as e where ${values.length === 0 ? sql`1 = 1` : sql`e.value not in (${sql.join([...values])})`})`,
  jsonTextAt: (column, path) => sql<string | null>`json_extract(${sql.ref(column)}, ${`$${path.map((key) => `.${JSON.stringify(key)}`).join('')}`})`,
  // The connection replaces SQLite's ASCII-only lower() with a Unicode one (connection.ts).
  lower: (expr) => sql<string>`lower(${expr})`,
  nextTimestamp: (column, now) =>
    sql`case when ${sql.ref(column)} < ${now} then ${now} else strftime('%Y-%m-%dT%H:%M:%fZ', ${sql.ref(column)}, '+0.001 seconds') end`,
  upsertInserted: null,
  // A table's entries are numbered by its counter row (sqlite/change-numbering.ts), made by its first entry.
  createChangeNumbers: async () => {},
  dropChangeNumbers: async () => {},
};
