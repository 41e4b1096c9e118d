import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { describe } from 'node:test';
import type { FastifyInstance, InjectOptions } from 'fastify';
import pg from 'pg';
import { buildApp } from '../../src/app.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import { bootstrap } from '../../src/store/bootstrap.ts';
import { type Database, openDatabase } from '../../src/store/database.ts';
import { migrate } from '../../src/store/migrations.ts';

/** The databases the suite runs against: SQLite always, PostgreSQL when the runner started one. */
export type DbKind = 'sqlite' | 'postgres';

export const TEST_KEY = 'rh_testkey_0123456789abcdefghijklmnopqrstu';

export function databaseKinds(): DbKind[] {
  return process.env.ROWHOUSE_TEST_PG_URL ? ['sqlite', 'postgres'] : ['sqlite'];
}

/** Runs the same tests once per database, each under a describe named for it. */
export function eachDatabase(title: string, body: (kind: DbKind) => void): void {
  for (const kind of databaseKinds()) describe(`${title} [${kind}]`, () => body(kind));
}

export interface ScratchDatabase {
  url: string;
  dir: string;
  drop(): Promise<void>;
}

/** A new empty database of the given kind (a file in a temp dir, or a fresh PostgreSQL database). */
export async function scratchDatabase(kind: DbKind): Promise<ScratchDatabase> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-test-'));
  if (kind === 'sqlite') {
    return { url: `sqlite:${path.join(dir, 'rowhouse.db')}`, dir, drop: async () => fs.rmSync(dir, { recursive: true, force: true }) };
  }
  const admin = process.env.ROWHOUSE_TEST_PG_URL as string;
  const name = `rh_test_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  await client.query(`create database ${name}`);
  await client.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    dir,
    async drop() {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as is instead of JSON. */
  raw?: string | Buffer;
  headers?: Record<string, string>;
  /** The API key to send; null sends none. Default: the test key. */
  key?: string | null;
  query?: Record<string, unknown>;
}

/** Request options with an Idempotency-Key header (CONTRACT §12) added to theirs. */
export const withKey = (key: string, options: RequestOptions = {}): RequestOptions => ({ ...options, headers: { ...options.headers, 'idempotency-key': key } });

export interface TestApp {
  kind: DbKind;
  scratch: ScratchDatabase;
  app: FastifyInstance;
  database: Database;
  config: Config;
  ownerId: string;
  request(method: InjectOptions['method'], url: string, options?: RequestOptions): Promise<Reply>;
  get(url: string, options?: RequestOptions): Promise<Reply>;
  post(url: string, body?: unknown, options?: RequestOptions): Promise<Reply>;
  put(url: string, body?: unknown, options?: RequestOptions): Promise<Reply>;
  patch(url: string, body?: unknown, options?: RequestOptions): Promise<Reply>;
  delete(url: string, body?: unknown, options?: RequestOptions): Promise<Reply>;
  close(): Promise<void>;
}

/** Query values that are not strings are sent as JSON text, as the API expects. */
function queryString(query: Record<string, unknown> | undefined): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined) params.append(k, typeof v === 'string' ? v : JSON.stringify(v));
  }
  const s = params.toString();
  return s ? `?${s}` : '';
}

export interface AppOptions {
  /** Another instance over that app's database (migrating and bootstrapping it again, as a start does); its close() leaves the database. */
  sharing?: TestApp;
  /** PostgreSQL: sees each statement the app sends to the server. */
  onQuery?: (sql: string) => void;
  /** The webhook worker's longest sleep between looks at the queue (buildApp's webhookPollMs). */
  webhookPollMs?: number;
  /** The service's log, at ROWHOUSE_LOG_LEVEL (default info), goes here; without it the app logs nothing. */
  logStream?: NodeJS.WritableStream;
  /** Change streams' heartbeat and stall times (buildApp's stream). */
  stream?: { heartbeatMs?: number; stallMs?: number };
}

/** The real app over a scratch database, driven through Fastify's inject. */
export async function startApp(kind: DbKind, env: Record<string, string> = {}, options: AppOptions = {}): Promise<TestApp> {
  const scratch = options.sharing?.scratch ?? (await scratchDatabase(kind));
  const config = loadConfig({
    ROWHOUSE_DATA_DIR: scratch.dir,
    DATABASE_URL: scratch.url,
    ROWHOUSE_API_KEY: TEST_KEY,
    ROWHOUSE_PUBLIC_URL: 'http://rowhouse.test',
    ...env,
  });
  const database = await openDatabase(config.databaseUrl, { ...config, onQuery: options.onQuery });
  await migrate(database.db, database.dialect);
  const boot = await bootstrap(database.db, { secret: config.secret, apiKey: config.apiKey });
  const app = await buildApp({
    config,
    database,
    secret: boot.secret,
    ...(options.logStream ? { logStream: options.logStream } : { logger: false }),
    webhookPollMs: options.webhookPollMs,
    stream: options.stream,
  });

  const request: TestApp['request'] = async (method, url, options = {}) => {
    const headers: Record<string, string> = { ...options.headers };
    const key = options.key === undefined ? TEST_KEY : options.key;
    if (key !== null) headers['x-api-key'] = key;
    let payload: string | Buffer | undefined;
    if (options.raw !== undefined) payload = options.raw;
    else if (options.body !== undefined) {
      payload = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await app.inject({ method, url: url + queryString(options.query), headers, payload });
    let body: unknown = undefined;
    try {
      body = res.body === '' ? undefined : JSON.parse(res.body);
    } catch {
      body = undefined;
    }
    return { status: res.statusCode, headers: res.headers as Reply['headers'], body, text: res.body };
  };

  return {
    kind,
    scratch,
    app,
    database,
    config,
    ownerId: boot.ownerId,
    request,
    get: (url, o) => request('GET', url, o),
    post: (url, body, o) => request('POST', url, { ...o, body }),
    put: (url, body, o) => request('PUT', url, { ...o, body }),
    patch: (url, body, o) => request('PATCH', url, { ...o, body }),
    delete: (url, body, o) => request('DELETE', url, { ...o, body }),
    async close() {
      await app.close();
      await database.close();
      if (!options.sharing) await scratch.drop();
    },
  };
}

/** Asserts the one error format (CONTRACT §3) and returns the body. */
export function expectError(reply: Reply, status: number): Record<string, unknown> {
  const b = reply.body;
  const ok =
    reply.status === status &&
    b !== null &&
    typeof b === 'object' &&
    b.statusCode === status &&
    typeof b.error === 'string' &&
    typeof b.message === 'string' &&
    b.message.length > 0;
  if (!ok) throw new Error(`expected a ${status} error body, got ${reply.status}: ${reply.text.slice(0, 500)}`);
  return b;
}

/** What GETs a path of the API: a TestApp (inject), or a real HTTP client (wire.ts overHttp). */
export interface Getter {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  get(path: string): Promise<{ status: number; body: any; text: string }>;
}

let freshTables = 0;
/** A table of the test's own (a new code each call: `prefix_n`), made with these fields: its code and id. */
export async function freshTable(t: Pick<TestApp, 'post'>, prefix: string, fields: unknown[]): Promise<{ code: string; id: string }> {
  const code = `${prefix}_${++freshTables}`;
  const r = await t.post('/api/tables', { code, name: code, fields });
  assert.equal(r.status, 201, r.text);
  return { code, id: r.body.id as string };
}

/** Every row of a table in id order, read through the list API page by page (following nextUrl). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function allRows(t: Getter, table: string): Promise<Record<string, any>[]> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const out: Record<string, any>[] = [];
  const sort = JSON.stringify([{ id: { direction: 'asc', nulls: 'nullsLast' } }]);
  let url: string | null = `/api/tables/${table}/rows?${new URLSearchParams({ pageSize: '200', sort })}`;
  while (url) {
    const r = await t.get(url);
    if (r.status !== 200) throw new Error(`listing ${table}: ${r.status} ${r.text.slice(0, 300)}`);
    out.push(...r.body.data);
    url = r.body.nextUrl ? (r.body.nextUrl as string).replace(/^https?:\/\/[^/]+/, '') : null;
  }
  return out;
}

/** A file uploaded for a row, through file-upload-url and its URL (step 1 and 2 of the upload): its id, to attach. */
export async function uploadFile(t: TestApp, table: string, rowId: string, bytes: string | Buffer = 'file bytes', type = 'text/plain'): Promise<string> {
  const issued = await t.post(`/api/tables/${table}/rows/${encodeURIComponent(rowId)}/file-upload-url`, { count: 1 });
  assert.equal(issued.status, 200, issued.text);
  const { id, url } = issued.body.data[0];
  const u = new URL(url);
  const put = await t.request('PUT', u.pathname + u.search, { raw: bytes, headers: { 'content-type': type }, key: null });
  assert.equal(put.status, 200, put.text);
  return id;
}
