import type SqliteDatabase from 'better-sqlite3';
import type { RowScan } from '../dialect.ts';
import { requestReader, sameSemantics } from './connection.ts';
import { withStatementCache } from './statement-cache.ts';

/**
 * SQLite's reads outside transactions, on connections other than the main one (WAL lets them read
 * while the main connection writes): they neither wait behind a write transaction nor see its work.
 * Not for :memory:, where a second connection would be another database.
 */
export class SqliteReads {
  /** The read-only connection of requests' reads, opened on first use. */
  private reader: SqliteDatabase.Database | undefined;
  private statements: ReturnType<typeof withStatementCache> | undefined;
  /** The connections of exports still reading. */
  private readonly exporters = new Set<SqliteDatabase.Database>();

  constructor(
    private readonly Sqlite: typeof SqliteDatabase,
    private readonly file: string,
  ) {}

  connection(): SqliteDatabase.Database {
    this.reader ??= requestReader(this.Sqlite, this.file);
    return this.reader;
  }

  /** A synchronous read on the read connection, for a query outside any transaction (readRows). */
  readonly read = (source: string, parameters: readonly unknown[]): Record<string, unknown>[] => {
    this.statements ??= withStatementCache(this.connection());
    return this.statements.prepare(source).all(...parameters) as Record<string, unknown>[];
  };

  /** A connection loads statistics with the schema: the read connection is opened anew. */
  reopen(): void {
    this.reader?.close();
    this.reader = undefined;
    this.statements = undefined;
  }

  /**
   * A query's rows as arrays, read lazily on a connection of its own, so a long read (an export)
   * holds no lock the other requests wait for and sees one snapshot throughout. Close the iterator
   * (return()) when done early.
   */
  iterate(query: { sql: string; parameters: readonly unknown[] }): IterableIterator<unknown[]> {
    // A connection of its own: its snapshot lasts as long as the export, and must not
    // become that of the other reads (a new row unseen, a revoked key still accepted).
    const conn = new this.Sqlite(this.file, { readonly: true });
    sameSemantics(conn);
    this.exporters.add(conn);
    const rows = conn.prepare(query.sql).raw(true).iterate(...query.parameters) as IterableIterator<unknown[]>;
    const done = () => {
      rows.return?.();
      this.exporters.delete(conn);
      if (conn.open) conn.close();
    };
    return {
      [Symbol.iterator]() {
        return this;
      },
      next() {
        const r = rows.next();
        if (r.done) done();
        return r;
      },
      return(value?: unknown) {
        done();
        return { done: true as const, value };
      },
    };
  }

  /** An export's rows in one statement (iterate), `chunk` at a time. */
  async *scan(scan: RowScan): AsyncGenerator<unknown[][]> {
    const rows = this.iterate(scan.query(scan.limit));
    try {
      for (;;) {
        const chunk: unknown[][] = [];
        let r: IteratorResult<unknown[]> | undefined;
        while (chunk.length < scan.chunk && !(r = rows.next()).done) chunk.push(r.value);
        if (chunk.length === 0) return;
        yield chunk;
      }
    } finally {
      rows.return?.();
    }
  }

  close(): void {
    for (const conn of this.exporters) {
      try {
        conn.close();
      } catch {
        // An export still reading: its statement ends with the process.
      }
    }
    this.reader?.close();
  }
}
