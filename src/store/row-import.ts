import { randomUUID } from 'node:crypto';
import { type RowCreate, checkRowCreate } from '../domain/row-values.ts';
import { type ErrorDetail, ServiceError, invalid } from '../domain/errors.ts';
import type { FileRow } from '../import/file-rows.ts';
import { withBoundedHeapGrowth } from '../import/heap-growth.ts';
import { type Database, type Db, inTransaction } from './database.ts';
import type { WriteContext } from './resources/resource-spec.ts';
import type { RowStore } from './rows.ts';
import type { TableDef } from '../domain/table.ts';

/**
 * Writes an imported file's rows (POST /rows-import), streamed in chunks: each row checked as the
 * API checks a create, then written as bulk creates (or upserts) are. With `atomic` every row goes
 * in one transaction, or none; without, each chunk commits by itself and the rows that fail are
 * left out, counted and named.
 */

export interface ImportOptions {
  mode: 'create' | 'upsert';
  atomic: boolean;
}

/** One problem of an import: the line it starts on, the column (or '' for the whole row), what is wrong. */
export interface ImportProblem {
  line: number;
  column: string;
  message: string;
}

export interface ImportResult {
  created: number;
  updated: number;
  failed: number;
  problems: ImportProblem[];
  warnings: string[];
}

/** Problems named one by one; beyond them only counted. */
const MAX_PROBLEMS = 100;
/**
 * Rows checked before they are written together: as many as one insert statement carries (up to
 * 1,000; PostgreSQL), or 100 where each row is a statement of its own (SQLite), since rows held
 * longer outlive the young heap: importing 200,000 rows on SQLite grew RSS by 140 MiB with chunks
 * of 1,000, by 55 MiB with chunks of 100, at the same CPU time per row.
 */
const chunkSize = (perInsert: number) => Math.min(1000, Math.max(100, perInsert));

/**
 * SQLite, for the length of an atomic import's transaction (the main connection is the import's
 * alone meanwhile: SQLite writes take turns), two settings of the connection, put back after:
 *
 * - A page cache of 32 MiB instead of the service's 64 MiB. The cache is memory the service keeps;
 *   an import fills it from wherever it stood, at once: a million dataset rows grew the service's
 *   RSS by 62 MiB with the 64 MiB cache (most of it the cache), by 31 to 36 MiB with 32 MiB. A
 *   smaller cache costs system time: the pages of a randomly ordered index (amount: about 12,000
 *   pages at a million rows) that do not fit are spilled to the write-ahead log and read back.
 *   At a million rows (one run each, a busy machine): 3.3 us a row of system time with 64 MiB,
 *   6.0 with 16 MiB, 8.3 with SQLite's default 2 MiB. 32 MiB is half the budget the import's
 *   memory growth is held to (bench/import.ts).
 * - No checkpoint at commit (wal_autocheckpoint 0). The log holds the whole transaction (it cannot
 *   be copied back before the commit; 1.3 GB for a million dataset rows with their change
 *   entries): past 10,000 pages the main connection's backstop checkpoint would copy all of it at
 *   commit, the event loop waiting for seconds. The checkpoint worker (sqlite-checkpoints.ts),
 *   there to keep checkpoints out of commits, copies it right after, on its own thread.
 *
 * Answers what puts the settings back.
 */
function sqliteImportSettings(database: Database): () => void {
  const { runNow } = database;
  if (database.dialect.name !== 'sqlite' || !runNow) return () => {};
  const setting = (name: string) => Number(Object.values(runNow(`pragma ${name}`, [])[0] ?? {})[0]);
  const before = { cache_size: setting('cache_size'), wal_autocheckpoint: setting('wal_autocheckpoint') };
  runNow('pragma cache_size = -32768', []);
  runNow('pragma wal_autocheckpoint = 0', []);
  return () => {
    for (const [name, value] of Object.entries(before)) if (Number.isInteger(value)) runNow(`pragma ${name} = ${value}`, []);
  };
}

interface Checked {
  line: number;
  input: RowCreate;
}

export class RowImporter {
  constructor(
    private readonly database: Database,
    private readonly rows: RowStore,
  ) {}

  /** Imports the rows of `source`, which yields them in batches (as many as were read together). */
  import(table: TableDef, source: AsyncIterable<FileRow[]>, options: ImportOptions, ctx: WriteContext): Promise<Omit<ImportResult, 'warnings'>> {
    return withBoundedHeapGrowth(() => this.importRows(table, source, options, ctx));
  }

  private async importRows(table: TableDef, source: AsyncIterable<FileRow[]>, options: ImportOptions, ctx: WriteContext): Promise<Omit<ImportResult, 'warnings'>> {
    const result = { created: 0, updated: 0, failed: 0, problems: [] as ImportProblem[] };
    let seen = 0;
    const size = chunkSize(this.database.dialect.rowsPerInsert(this.rows.columns(table).length));
    const problem = (line: number, column: string, message: string) => {
      result.failed++;
      if (result.problems.length < MAX_PROBLEMS) result.problems.push({ line, column, message });
    };
    /** The file's rows, checked, a chunk at a time; the rows with problems left out (and named). */
    const chunks = async function* (): AsyncGenerator<Checked[]> {
      let chunk: Checked[] = [];
      for await (const batch of source) {
        for (const { line, body } of batch) {
          seen++;
          const details: ErrorDetail[] = [];
          const input = checkRowCreate(body, table, '', details, options.mode === 'upsert');
          if (details.length > 0) {
            for (const d of details) problem(line, d.path.replace(/^values\./, ''), d.message);
            continue;
          }
          chunk.push({ line, input });
          if (chunk.length === size) {
            yield chunk;
            chunk = [];
          }
        }
      }
      if (chunk.length > 0) yield chunk;
    };

    if (options.atomic) {
      let restore = () => {};
      try {
        await inTransaction(this.database, async (tx) => {
          restore();
          restore = sqliteImportSettings(this.database);
          let writing = true;
          // One chunk's write is in flight while the next is read and checked: on PostgreSQL the
          // service would otherwise wait for each insert with nothing to do, and the server for the
          // service (a million rows: 53 s, 60% of it idle, before; see bench/import.ts).
          let inFlight: { chunk: Checked[]; done: Promise<void> } | null = null;
          const settle = async () => {
            if (!inFlight) return;
            const { chunk, done } = inFlight;
            inFlight = null;
            try {
              await done;
            } catch (err) {
              writing = false;
              if (!this.named(err, chunk, problem)) throw err;
            }
          };
          try {
            for await (const chunk of chunks()) {
              await settle();
              // After the first problem nothing more is written: the rest is read for its problems.
              if (!writing || result.failed > 0) continue;
              const done = this.write(tx, table, chunk, options, ctx, result);
              // Its failure is taken up by settle(); until then it is not an unhandled rejection.
              done.catch(() => {});
              inFlight = { chunk, done };
            }
          } finally {
            // The file failing to read ends the transaction: never while a write still runs in it.
            await inFlight?.done.catch(() => {});
          }
          await settle();
          if (seen === 0) throw invalid([{ path: 'line 2', message: 'the file has no rows' }], 'Invalid import: the file has no rows');
          if (result.failed > 0) throw new ImportFailed();
        });
      } catch (err) {
        if (!(err instanceof ImportFailed)) throw err;
        throw invalid(
          result.problems.map((p) => ({ path: p.column ? `line ${p.line}, column ${p.column}` : `line ${p.line}`, message: p.message })),
          `Invalid import: ${result.failed} ${result.failed === 1 ? 'row has a problem' : 'rows have problems'}${result.failed > MAX_PROBLEMS ? ` (the first ${MAX_PROBLEMS} named)` : ''}; nothing was written`,
        );
      } finally {
        restore();
      }
      return result;
    }

    for await (const chunk of chunks()) {
      try {
        await inTransaction(this.database, (tx) => this.write(tx, table, chunk, options, ctx, result));
      } catch {
        // Some row of the chunk failed in the database (an id that exists): each row alone, to name it.
        for (const one of chunk) {
          try {
            await inTransaction(this.database, (tx) => this.write(tx, table, [one], options, ctx, result));
          } catch (err) {
            if (!this.named(err, [one], problem)) throw err;
          }
        }
      }
    }
    if (seen === 0) throw invalid([{ path: 'line 2', message: 'the file has no rows' }], 'Invalid import: the file has no rows');
    return result;
  }

  /** Writes checked rows; counts what it did once the rows are in (a chunk that fails counts nothing). */
  private async write(tx: Db, table: TableDef, chunk: Checked[], options: ImportOptions, ctx: WriteContext, result: { created: number; updated: number }): Promise<void> {
    let created = 0;
    let updated = 0;
    const inserts: Checked[] = [];
    for (const one of chunk) {
      if (options.mode === 'upsert' && one.input.id !== undefined) {
        const done = await this.rows.create(tx, table, one.input, ctx).catch((err) => {
          throw err instanceof ServiceError ? Object.assign(err, { importLine: one.line }) : err;
        });
        if (done.created) created++;
        else updated++;
      } else inserts.push(one);
    }
    await this.rows.insertMany(
      tx,
      table,
      inserts.map(({ input }) => ({ id: input.id ?? randomUUID(), values: input.values })),
      ctx,
      (k, err) => Object.assign(err, { importLine: inserts[k].line }),
    );
    result.created += created + inserts.length;
    result.updated += updated;
  }

  /** Names a row's failure in the database (an id that exists) as its line's problem; false for any other error. */
  private named(err: unknown, chunk: Checked[], problem: (line: number, column: string, message: string) => void): boolean {
    // The service's own fault or outage is no line's problem.
    if (!(err instanceof ServiceError) || err.code === 'internal' || err.code === 'unavailable') return false;
    const line = (err as { importLine?: number }).importLine ?? (chunk.length === 1 ? chunk[0].line : undefined);
    if (line === undefined) return false;
    problem(line, err.code === 'row_exists' ? 'id' : '', err.message);
    return true;
  }
}

/** Ends an atomic import's transaction (rolling it back) once its problems are counted. */
class ImportFailed extends Error {}
