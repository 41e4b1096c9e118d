import type { Database, Db } from './database.ts';

/**
 * A memo of reads that holds only while nothing has been committed to the database since they were
 * made. SQLite counts commits made by any other connection (PRAGMA data_version on the read
 * connection): this process's own writes and those of another process, such as the CLI revoking a
 * key. Where no such counter exists (PostgreSQL, where other instances write), nothing is memoised.
 * So a revoked key or a changed table is seen on the very next request, as without the memo.
 */
export class ReadCache<V> {
  private readonly entries = new Map<string, V>();
  private generation: number | undefined;

  constructor(
    private readonly database: Database,
    private readonly max = 1000,
  ) {}

  async get(db: Db, key: string, load: () => Promise<V>): Promise<V> {
    // Inside a transaction the reads are the transaction's own: never memoised.
    const counter = db === this.database.db ? this.database.commitCounter?.() : undefined;
    if (counter === undefined) return load();
    if (counter !== this.generation) {
      this.entries.clear();
      this.generation = counter;
    }
    if (this.entries.has(key)) return this.entries.get(key) as V;
    // A commit between the counter and the load moves the counter: the next request reloads.
    const value = await load();
    if (this.entries.size >= this.max) this.entries.clear();
    this.entries.set(key, value);
    return value;
  }
}
