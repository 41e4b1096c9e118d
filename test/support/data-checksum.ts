import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { TestApp } from './harness.ts';

/**
 * A digest of everything the database holds: every row of every table, the service's own
 * (tables, fields, resources, keys, files, changes) and each user table's. Two equal digests mean
 * no data changed in between. The one column a request may write without changing data is left
 * out: an API key's lastUsedAt, which authenticating a request moves (at most once a minute).
 * SQLite's own tables (sqlite_stat1, which ANALYZE writes) are not data.
 */

const VOLATILE: Record<string, readonly string[]> = { rh_api_keys: ['lastUsedAt'] };

/** The database's tables, by name. */
export async function databaseTables(t: TestApp): Promise<string[]> {
  const { db, dialect } = t.database;
  const query =
    dialect.name === 'sqlite'
      ? sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name`
      : sql<{ name: string }>`select table_name as name from information_schema.tables
          where table_schema = current_schema() and table_type = 'BASE TABLE' order by table_name`;
  return (await query.execute(db)).rows.map((r) => r.name);
}

/** A value as text that is the same for the same data on either database. */
function plain(v: unknown): unknown {
  if (Buffer.isBuffer(v)) return `bytes:${v.toString('hex')}`;
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'bigint') return String(v);
  return v;
}

export async function dataChecksum(t: TestApp): Promise<string> {
  return t.database.dialect.name === 'postgres' ? postgresChecksum(t) : readChecksum(t);
}

/** On PostgreSQL, in one statement: each table's rows as JSON text, sorted and digested by the server. */
async function postgresChecksum(t: TestApp): Promise<string> {
  const tables = await databaseTables(t);
  const parts = tables.map((name) => {
    const row = (VOLATILE[name] ?? []).reduce((expr, column) => sql`${expr} - ${column}`, sql`to_jsonb(x)`);
    return sql`select ${name} as name, md5(coalesce(string_agg((${row})::text, E'\n' order by (${row})::text), '')) as digest from ${sql.table(name)} x`;
  });
  const { rows } = await sql<{ name: string; digest: string }>`${sql.join(parts, sql` union all `)}`.execute(t.database.db);
  return createHash('sha256').update(JSON.stringify(rows.sort((a, b) => (a.name < b.name ? -1 : 1)))).digest('hex');
}

/** Every row read and digested here. */
async function readChecksum(t: TestApp): Promise<string> {
  const hash = createHash('sha256');
  for (const name of await databaseTables(t)) {
    const skip = VOLATILE[name] ?? [];
    const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(name)}`.execute(t.database.db);
    const lines = rows.map((row) => JSON.stringify(Object.entries(row).filter(([k]) => !skip.includes(k)).map(([k, v]) => [k, plain(v)]))).sort();
    hash.update(`${name}\n${lines.join('\n')}\n\n`);
  }
  return hash.digest('hex');
}
