import type { Database, Db } from './database.ts';

/**
 * A memo of API keys and table definitions: the reads every request makes before its own work.
 * It holds until the metadata (rh_api_keys, rh_members, rh_tables, rh_fields) changes, whoever
 * changes it: triggers signal every such change (migration 4), and the database's
 * `metadataVersion()` says whether one happened since (see Database). Row writes leave it be.
 *
 * - SQLite: the triggers bump a counter row, read on every lookup (a prepared read on the read
 *   connection: microseconds), so any change, by this process or another, is seen on the next request.
 * - PostgreSQL: the triggers NOTIFY at commit; a LISTEN connection moves the version, and this
 *   instance's own metadata commits move it before they return (postgres/metadata-listener.ts). While that
 *   connection is down the version is unknown and every lookup reads the database.
 */
export class MetadataCache<V> {
  private readonly entries = new Map<string, V>();
  private version: number | undefined;

  constructor(
    private readonly database: Database,
    private readonly max = 1000,
  ) {}

  /** The metadata version the memo may be used at (its entries emptied if it moved); undefined: it may not be. */
  private usable(db: Db): number | undefined {
    // Inside a transaction the reads are the transaction's own: never memoised.
    const version = db === this.database.db ? this.database.metadataVersion() : undefined;
    if (version !== undefined && version !== this.version) {
      this.entries.clear();
      this.version = version;
    }
    return version;
  }

  /** The value memoised for `key` while the metadata is unchanged, without waiting; undefined: load it. */
  peek(db: Db, key: string): V | undefined {
    return this.usable(db) === undefined ? undefined : this.entries.get(key);
  }

  /** `load()`'s answer for `key`; misses (undefined) are not kept, so junk keys cannot crowd out real ones. */
  async get(db: Db, key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const version = this.usable(db);
    if (version === undefined) return load();
    const hit = this.entries.get(key);
    if (hit !== undefined) return hit;
    const value = await load();
    // A change signalled while the load ran may have come before or after its read: keep nothing.
    if (value === undefined || this.database.metadataVersion() !== version) return value;
    if (this.entries.size >= this.max) this.entries.clear();
    this.entries.set(key, value);
    return value;
  }
}
