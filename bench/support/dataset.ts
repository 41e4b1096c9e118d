import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { fieldType } from '../../src/domain/field-types/registry.ts';
import type { FieldDef } from '../../src/domain/field-types/field-type.ts';
import { fieldColumn } from '../../src/domain/row-columns.ts';
import pg from 'pg';
import { postgresDialect } from '../../src/store/postgres/dialect.ts';
import { sqliteDialect } from '../../src/store/sqlite/dialect.ts';
import { physicalTable } from '../../src/store/user-tables.ts';
import { BENCH_KEY, ROOT } from './processes.ts';

/** The shared deterministic dataset (../shared/bench/dataset.mjs beside the repository). */
export interface DatasetModule {
  FIELDS: { code: string; type: string; required?: boolean }[];
  rows(n: number, seed?: number): Generator<{ id: string; values: Record<string, unknown> }>;
  rowId(i: number): string;
}

export async function dataset(): Promise<DatasetModule> {
  const file = path.resolve(ROOT, '../shared/bench/dataset.mjs');
  return (await import(file)) as DatasetModule;
}

export interface BenchTable {
  id: string;
  fields: FieldDef[];
  physical: string;
  column(code: string): string;
}

export async function api(base: string, method: string, url: string, body?: unknown): Promise<any> {
  const res = await fetch(base + url, {
    method,
    headers: { 'x-api-key': BENCH_KEY, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${url} → ${res.status}: ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
}

/**
 * The page of `code` that starts at row `depth` (a multiple of 200), reached as a client would: by
 * walking `nextUrl` 200 rows at a time (the largest page). Its path asks for `pageSize` rows; `last`
 * is the row before it (where a floor's keyset query starts).
 */
export async function pageAtRow(base: string, code: string, depth: number, pageSize = 50): Promise<{ path: string; last: { createdAt: string; id: string } }> {
  let url = `/api/tables/${code}/rows?pageSize=200`;
  let last = { createdAt: '', id: '' };
  for (let seen = 0; seen < depth; seen += 200) {
    const page = await api(base, 'GET', url);
    last = page.data[page.data.length - 1];
    const next = new URL(page.nextUrl);
    url = next.pathname + next.search;
  }
  return { path: url.replace('pageSize=200', `pageSize=${pageSize}`), last };
}

/** The fields the benchmark workloads filter and sort by: they get an index (`indexed: true`), as their owner would ask. */
export const INDEXED = ['status', 'amount'];

/** Creates the dataset's table through the API, with indexes on the INDEXED fields (and `extra` fields after the dataset's). */
export async function createBenchTable(base: string, code = 'bench', extra: unknown[] = []): Promise<BenchTable> {
  const ds = await dataset();
  const fields = [...ds.FIELDS.map((f) => (INDEXED.includes(f.code) ? { ...f, options: { indexed: true } } : f)), ...extra];
  return benchTable(await api(base, 'POST', '/api/tables', { code, name: 'Bench', fields }));
}

/** A table that exists already (as the API answers it), with its physical names. */
export async function existingTable(base: string, code: string): Promise<BenchTable> {
  return benchTable(await api(base, 'GET', `/api/tables/${code}`));
}

/** The floor's description of a dataset table (startFloor): its physical name and the dataset fields' columns. */
export function floorTable(ds: DatasetModule, table: BenchTable): { physical: string; columns: Record<string, string> } {
  return { physical: table.physical, columns: Object.fromEntries(ds.FIELDS.map((f) => [f.code, table.column(f.code)])) };
}

function benchTable(table: { id: string; fields: FieldDef[] }): BenchTable {
  const byCode = new Map<string, FieldDef>(table.fields.map((f: FieldDef) => [f.code, f]));
  return {
    id: table.id,
    fields: table.fields,
    physical: physicalTable(table.id),
    column: (code) => (code in { id: 1 } ? 'id' : fieldColumn((byCode.get(code) as FieldDef).id)),
  };
}

/**
 * Bodies of single-row creates as users send them: a whole dataset row (all nine fields: text,
 * numbers, a boolean, a date, a dateTime, a record and a list) with a fresh client id, the ids
 * counting up from `firstId` (dataset row ids, so past the loaded rows no id repeats). Callers
 * that share one maker between the service and the floor never send one id twice.
 */
export function createBodies(ds: DatasetModule, firstId: number): () => string {
  const values = [...ds.rows(10_000, 7)].map((r) => r.values);
  let created = 0;
  return () => JSON.stringify({ id: ds.rowId(firstId + created), values: values[created++ % values.length] });
}

/** Loads n dataset rows through the API, as users load theirs: 1,000-row bulk creates, one after another (row i with `more(i)` added to its values). */
export async function loadThroughApi(base: string, code: string, n: number, more?: (i: number) => Record<string, unknown>): Promise<void> {
  const ds = await dataset();
  let data: { id: string; values: Record<string, unknown> }[] = [];
  let i = 0;
  for (const r of ds.rows(n)) {
    data.push(more ? { id: r.id, values: { ...r.values, ...more(i) } } : r);
    i++;
    if (data.length === 1000) {
      await api(base, 'POST', `/api/tables/${code}/rows-bulk`, { data });
      data = [];
    }
  }
  if (data.length > 0) await api(base, 'POST', `/api/tables/${code}/rows-bulk`, { data });
}

/**
 * Fills the table with n dataset rows straight into the SQLite file, in one transaction: the
 * figures measure reading, not loading. createdAt is one second apart per row, in row order.
 */
export async function fillSqlite(dbFile: string, table: BenchTable, n: number, memberId: string): Promise<void> {
  const ds = await dataset();
  const db = new SqliteDatabase(dbFile);
  db.pragma('journal_mode = WAL');
  const cols = ['id', 'created_at', 'updated_at', 'created_by', 'updated_by', ...table.fields.map((f) => fieldColumn(f.id))];
  const insert = db.prepare(`insert into ${table.physical} (${cols.join(', ')}) values (${cols.map(() => '?').join(', ')})`);
  const base = Date.UTC(2025, 0, 1);
  db.transaction(() => {
    let i = 0;
    for (const r of ds.rows(n)) {
      const ts = new Date(base + i * 1000).toISOString();
      const vals = table.fields.map((f) => {
        const v = r.values[f.code];
        return v === null || v === undefined ? null : fieldType(f.type).toDb(v, sqliteDialect);
      });
      insert.run(r.id, ts, ts, memberId, memberId, ...vals);
      i++;
    }
  })();
  // Exact statistics, as the service keeps them.
  db.exec('analyze');
  db.close();
}

/** The same rows as fillSqlite, into a PostgreSQL table, in multi-row inserts within one transaction. */
export async function fillPostgres(url: string, table: BenchTable, n: number, memberId: string): Promise<void> {
  const ds = await dataset();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const cols = ['id', 'created_at', 'updated_at', 'created_by', 'updated_by', ...table.fields.map((f) => fieldColumn(f.id))];
  const base = Date.UTC(2025, 0, 1);
  try {
    await client.query('begin');
    let batch: unknown[][] = [];
    const flush = async () => {
      if (batch.length === 0) return;
      const params: unknown[] = [];
      const tuples = batch.map((row) => `(${row.map((v) => `$${params.push(v)}`).join(', ')})`);
      await client.query(`insert into ${table.physical} (${cols.join(', ')}) values ${tuples.join(', ')}`, params);
      batch = [];
    };
    let i = 0;
    for (const r of ds.rows(n)) {
      const ts = new Date(base + i * 1000).toISOString();
      const vals = table.fields.map((f) => {
        const v = r.values[f.code];
        return v === null || v === undefined ? null : fieldType(f.type).toDb(v, postgresDialect);
      });
      batch.push([r.id, ts, ts, memberId, memberId, ...vals]);
      if (batch.length === 1000) await flush();
      i++;
    }
    await flush();
    await client.query('commit');
    await client.query(`analyze ${table.physical}`);
  } finally {
    await client.end();
  }
}
