import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { physicalColumn, physicalTable } from '../../src/store/user-tables.ts';
import type { Reply, TestApp } from '../support/harness.ts';

/**
 * Helpers for the table-definition tests: the HTTP side (create, read) and the SQL side (the real
 * table behind a user table, read and written directly because the rows API is not under test).
 */

export interface Field {
  id: string;
  code: string;
  name: string;
  type: string;
  required: boolean;
  options: Record<string, unknown>;
}

export interface Table {
  id: string;
  code: string | null;
  name: string;
  description: string | null;
  fields: Field[];
  createdAt: string;
  updatedAt: string;
  createdBy: string;
  updatedBy: string;
}

export const SYSTEM_COLUMNS = ['id', 'created_at', 'updated_at', 'created_by', 'updated_by'];
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export class TableKit {
  constructor(readonly t: TestApp) {}

  get db() {
    return this.t.database.db;
  }

  async create(body: Record<string, unknown>): Promise<Table> {
    const r = await this.t.post('/api/tables', body);
    assert.equal(r.status, 201, r.text);
    return r.body as Table;
  }

  async get(ref: string): Promise<Table> {
    const r = await this.t.get(`/api/tables/${ref}`);
    assert.equal(r.status, 200, r.text);
    return r.body as Table;
  }

  async put(ref: string, body: Record<string, unknown>): Promise<Reply> {
    return this.t.put(`/api/tables/${ref}`, body);
  }

  async count(): Promise<number> {
    const r = await this.t.get('/api/tables', { query: { paging: { limit: 1000 } } });
    assert.equal(r.status, 200, r.text);
    return r.body.data.length;
  }

  field(table: Table, code: string): Field {
    const f = table.fields.find((x) => x.code === code);
    assert.ok(f, `no field ${code} in ${JSON.stringify(table.fields.map((x) => x.code))}`);
    return f;
  }

  /** Physical column name → whether it is NOT NULL. */
  async columns(tableId: string): Promise<Record<string, boolean>> {
    const name = physicalTable(tableId);
    if (this.t.kind === 'sqlite') {
      const r = await sql<{ name: string; notnull: number }>`select name, "notnull" from pragma_table_info(${name})`.execute(this.db);
      return Object.fromEntries(r.rows.map((c) => [c.name, Number(c.notnull) === 1]));
    }
    const r = await sql<{ column_name: string; is_nullable: string }>`
      select column_name, is_nullable from information_schema.columns
      where table_schema = current_schema() and table_name = ${name}`.execute(this.db);
    return Object.fromEntries(r.rows.map((c) => [c.column_name, c.is_nullable === 'NO']));
  }

  /** Physical column name → declared SQL type (lower case). */
  async columnTypes(tableId: string): Promise<Record<string, string>> {
    const name = physicalTable(tableId);
    if (this.t.kind === 'sqlite') {
      const r = await sql<{ name: string; type: string }>`select name, type from pragma_table_info(${name})`.execute(this.db);
      return Object.fromEntries(r.rows.map((c) => [c.name, c.type.toLowerCase()]));
    }
    const r = await sql<{ column_name: string; data_type: string }>`
      select column_name, data_type from information_schema.columns
      where table_schema = current_schema() and table_name = ${name}`.execute(this.db);
    return Object.fromEntries(r.rows.map((c) => [c.column_name, c.data_type.toLowerCase()]));
  }

  /** The sorted physical column names, system columns included. */
  async columnNames(tableId: string): Promise<string[]> {
    return Object.keys(await this.columns(tableId)).sort();
  }

  /** What the field columns should be: system columns plus one per field. */
  expectedColumns(fields: { id: string }[]): string[] {
    return [...SYSTEM_COLUMNS, ...fields.map((f) => physicalColumn(f.id))].sort();
  }

  async tableExists(tableId: string): Promise<boolean> {
    const name = physicalTable(tableId);
    const r =
      this.t.kind === 'sqlite'
        ? await sql<{ n: number }>`select count(*) as n from sqlite_master where type = 'table' and name = ${name}`.execute(this.db)
        : await sql<{ n: number }>`select count(*)::int as n from information_schema.tables where table_schema = current_schema() and table_name = ${name}`.execute(this.db);
    return Number(r.rows[0].n) > 0;
  }

  /** How many real tables behind user tables exist. */
  async physicalTableCount(): Promise<number> {
    const r =
      this.t.kind === 'sqlite'
        ? await sql<{ n: number }>`select count(*) as n from sqlite_master where type = 'table' and substr(name, 1, 5) = 'rows_'`.execute(this.db)
        : await sql<{ n: number }>`select count(*)::int as n from information_schema.tables where table_schema = current_schema() and substr(table_name, 1, 5) = 'rows_'`.execute(this.db);
    return Number(r.rows[0].n);
  }

  /** Names of the secondary indexes on the table (not the primary key's). */
  async indexes(tableId: string): Promise<string[]> {
    const name = physicalTable(tableId);
    const r =
      this.t.kind === 'sqlite'
        ? await sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = ${name} and name not like 'sqlite_autoindex%'`.execute(this.db)
        : await sql<{ name: string }>`select indexname as name from pg_indexes where schemaname = current_schema() and tablename = ${name} and indexname not like '%_pkey'`.execute(this.db);
    return r.rows.map((x) => x.name).sort();
  }

  /** Inserts a row by SQL; `values` maps field ids to column values as the driver takes them. */
  async insert(tableId: string, values: Record<string, unknown>, id: string = randomUUID()): Promise<string> {
    const now = new Date().toISOString();
    const columns: Record<string, unknown> = { id, created_at: now, updated_at: now, created_by: this.t.ownerId, updated_by: this.t.ownerId };
    for (const [fieldId, v] of Object.entries(values)) columns[physicalColumn(fieldId)] = v;
    await this.db.insertInto(physicalTable(tableId)).values(columns).execute();
    return id;
  }

  /** Every row of the real table, by id, with all its columns. */
  async rows(tableId: string): Promise<Record<string, unknown>[]> {
    return this.db.selectFrom(physicalTable(tableId)).selectAll().orderBy('id').execute();
  }

  /** One column of every row, by id. */
  async columnValues(tableId: string, fieldId: string): Promise<Record<string, unknown>> {
    const rows = await this.db.selectFrom(physicalTable(tableId)).select(['id', physicalColumn(fieldId)]).execute();
    return Object.fromEntries(rows.map((r) => [r.id as string, r[physicalColumn(fieldId)]]));
  }

  /** The state a rejected change must leave untouched: metadata, columns, indexes and rows. */
  async snapshot(tableId: string): Promise<unknown> {
    return {
      table: await this.get(tableId),
      columns: await this.columns(tableId),
      indexes: await this.indexes(tableId),
      rows: await this.rows(tableId),
    };
  }

  /** A non-null column value of the given type, as the driver takes it. */
  sample(type: string): unknown {
    const d = this.t.database.dialect;
    const samples: Record<string, unknown> = {
      text: 'hello',
      number: 1.5,
      boolean: d.encodeBoolean(true),
      dateTime: '2024-05-01T09:30:00.000Z',
      date: '2024-05-01',
      time: '09:30:00',
      yearMonth: '2024-05',
      select: 'red',
      record: d.encodeJson({ a: 1 }),
      list: d.encodeJson([1, 'two']),
      file: d.encodeJson({ id: 'f1', name: 'a.txt' }),
    };
    assert.ok(type in samples, `no sample for ${type}`);
    return samples[type];
  }
}

/** The `path`s of an error's details. */
export function detailPaths(body: Record<string, unknown>): string[] {
  const details = body.details as { path: string; message: string }[] | undefined;
  assert.ok(Array.isArray(details), `expected details in ${JSON.stringify(body)}`);
  for (const d of details) {
    assert.equal(typeof d.path, 'string');
    assert.equal(typeof d.message, 'string');
    assert.ok(d.message.length > 0);
  }
  return details.map((d) => d.path);
}

/** Asserts that each wanted path is among the error's details. */
export function assertPaths(body: Record<string, unknown>, wanted: string[]): void {
  const paths = detailPaths(body);
  for (const p of wanted) assert.ok(paths.includes(p), `expected a detail at ${p}, got ${JSON.stringify(body.details)}`);
}
