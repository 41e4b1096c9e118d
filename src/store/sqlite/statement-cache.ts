import type SqliteDatabase from 'better-sqlite3';

/**
 * A statement whose rows are objects made here from better-sqlite3's arrays (raw mode): the objects
 * better-sqlite3 makes cost twice as much. A 51-row page of the benchmark table (14 columns):
 * 195 µs as its objects, 101 µs as arrays, 113 µs as arrays made into objects here (a scratch loop).
 * Only for statements whose text has no `*`: their result columns are named by the text alone, so
 * the names read once at prepare stay right when SQLite prepares them again after a schema change.
 */
export class ObjectRows {
  readonly reader = true;
  private readonly names: string[];

  constructor(private readonly stmt: SqliteDatabase.Statement) {
    stmt.raw(true);
    this.names = stmt.columns().map((c) => c.name);
  }

  all(...parameters: unknown[]): Record<string, unknown>[] {
    const arrays = this.stmt.all(...parameters) as unknown[][];
    const rows: Record<string, unknown>[] = new Array(arrays.length);
    for (let i = 0; i < arrays.length; i++) rows[i] = this.row(arrays[i]);
    return rows;
  }

  *iterate(...parameters: unknown[]): IterableIterator<Record<string, unknown>> {
    for (const values of this.stmt.iterate(...parameters) as IterableIterator<unknown[]>) yield this.row(values);
  }

  run(...parameters: unknown[]): SqliteDatabase.RunResult {
    return this.stmt.run(...parameters);
  }

  private row(values: unknown[]): Record<string, unknown> {
    const { names } = this;
    const row: Record<string, unknown> = {};
    for (let k = 0; k < names.length; k++) row[names[k]] = values[k];
    return row;
  }
}

export type CachedStatement = SqliteDatabase.Statement | ObjectRows;

/** A cached statement, with what is to be done each time it is used (useOf). */
interface Cached {
  stmt: CachedStatement;
  use: (() => void) | undefined;
}

/**
 * better-sqlite3 compiles a statement on every prepare(); Kysely prepares per query, so keep them.
 * `useOf` says, once per statement text, what to do each time it is used (undefined: nothing).
 */
export function withStatementCache(raw: SqliteDatabase.Database, useOf?: (source: string) => (() => void) | undefined, size = 1000) {
  const cache = new Map<string, Cached>();
  return {
    close: () => raw.close(),
    prepare(source: string): CachedStatement {
      let cached = cache.get(source);
      if (cached) {
        // Refresh its place so the least recently used statement is the one dropped.
        cache.delete(source);
        cache.set(source, cached);
        cached.use?.();
        return cached.stmt;
      }
      const use = useOf?.(source);
      // Before it is prepared, as on every use (a statement that fails to prepare counts as used).
      use?.();
      const prepared = raw.prepare(source);
      cached = { stmt: prepared.reader && !source.includes('*') ? new ObjectRows(prepared) : prepared, use };
      if (cache.size >= size) cache.delete(cache.keys().next().value as string);
      cache.set(source, cached);
      return cached.stmt;
    },
  };
}
