import type SqliteDatabase from 'better-sqlite3';
import type { SqliteReads } from './reads.ts';

/**
 * The counter migration 4's triggers bump whenever the metadata may have changed (Database.metadataVersion).
 *
 * It is read on the main connection whenever no transaction is open there: that one is up to date
 * with this process's own commits, where the reader, after each of them, must take up the log
 * afresh (with its map of the file, 30 µs a read: a single-row patch spent 8% of its time there).
 * Inside a transaction the main connection would see uncommitted changes, so the reader answers.
 */
const counterSql = 'select n from rh_metadata_version where id = 1';

export class MetadataVersion {
  private counterOnMain: SqliteDatabase.Statement | undefined;
  private counterOnReader: SqliteDatabase.Statement | undefined;
  /**
   * The counter as read in this turn of the event loop: the requests a turn serves (they make no
   * I/O on SQLite) read it once, not once per lookup. Forgotten at the turn's end, so another
   * process's change is seen in the next turn, and at once whenever this process may change the
   * metadata on its main connection, so its own changes are seen by the very next request.
   */
  private seen: number | undefined;

  constructor(
    private readonly raw: SqliteDatabase.Database,
    private readonly reads: SqliteReads,
  ) {}

  readonly forget = (): void => {
    this.seen = undefined;
  };

  /** The read connection was opened anew: its statement with it. */
  readerReopened(): void {
    this.counterOnReader = undefined;
  }

  current(): number | undefined {
    if (this.seen !== undefined) return this.seen;
    try {
      const counter = this.raw.inTransaction
        ? (this.counterOnReader ??= this.reads.connection().prepare(counterSql).pluck())
        : (this.counterOnMain ??= this.raw.prepare(counterSql).pluck());
      this.seen = counter.get() as number | undefined;
    } catch {
      return undefined; // not migrated yet: nothing to trust
    }
    setImmediate(this.forget);
    return this.seen;
  }
}
