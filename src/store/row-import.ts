import { randomUUID } from 'node:crypto';
import { type RowCreate, checkRowCreate } from '../domain/row-values.ts';
import { type ErrorDetail, ServiceError, invalid } from '../domain/errors.ts';
import { type Database, type Db, inTransaction } from './database.ts';
import type { WriteContext } from './resources/resource-spec.ts';
import type { RowStore } from './rows.ts';
import type { TableDef } from '../domain/table.ts';
import type { FileRow } from '../domain/row.ts';

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

interface Checked {
  line: number;
  input: RowCreate;
}

export class RowImporter {
  constructor(
    private readonly database: Database,
    private readonly rows: RowStore,
  ) {}

  /**
   * Imports the rows of `source`, which yields them in batches (as many as were read together).
   * The caller bounds the heap's growth meanwhile (import/heap-growth.ts): a policy of the process, not of the store.
   */
  async import(table: TableDef, source: AsyncIterable<FileRow[]>, options: ImportOptions, ctx: WriteContext): Promise<Omit<ImportResult, 'warnings'>> {
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
          restore = this.database.tuneForImport();
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
    problem(line, ...lineProblem(err));
    return true;
  }
}

/**
 * A row's failure in the database as its line's column and message: an id that exists is the `id`
 * column's; an error about one of the row's values (a link to no row, a second link on a single
 * side of a pair) is that field's column, with its own message, as the checks before the write name them.
 */
function lineProblem(err: ServiceError): [column: string, message: string] {
  if (err.code === 'row_exists') return ['id', err.message];
  const detail = err.details?.length === 1 ? err.details[0] : undefined;
  if (detail?.path.startsWith('values.')) return [detail.path.slice('values.'.length), detail.message];
  return ['', err.message];
}

/** Ends an atomic import's transaction (rolling it back) once its problems are counted. */
class ImportFailed extends Error {}
