/**
 * Planner statistics that follow the user tables as they grow or shrink through the API.
 *
 * Which index serves a sorted, filtered page is the planner's choice, and it chooses from its
 * statistics: on SQLite, a table loaded through the API without them (or with the approximate ones
 * `PRAGMA optimize` takes) has its status index searched and 64,000 rows sorted per page instead of
 * its amount index walked. So every table is analysed exactly, in full, whenever as many of its
 * rows have been written since its last analysis as it had then; and on start, any
 * table whose statistics count a very different number of rows than it holds. That bounds the work
 * to about one full read of the table per doubling.
 */
export interface PlannerStatistics {
  /** `rows` rows of the user table `physical` were inserted, updated or deleted. */
  noteWrites(physical: string, rows: number): void;
  /** Resolves once no refresh is pending or running (tests and benchmarks wait for it). */
  settled(): Promise<void>;
  close(): Promise<void>;
}

/** Tables this small are planned well enough without statistics; changes below this never trigger work. */
const MIN_CHANGE = 500;

/** Analyses the given tables (null: every user table, only those found stale); answers their row counts. */
export type Refresh = (tables: string[] | null) => Promise<Map<string, number>>;

/** When to refresh: the same on both databases. */
export class Keeper implements PlannerStatistics {
  /** Per table: its rows at the last refresh, and the rows written since. */
  private readonly tables = new Map<string, { rows: number; written: number }>();
  private readonly pending = new Set<string>();
  private running: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly refresh: Refresh,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Checks every table once, in the background. */
  checkAll(): void {
    this.start(null);
  }

  noteWrites(physical: string, rows: number): void {
    const t = this.tables.get(physical) ?? { rows: 0, written: 0 };
    t.written += rows;
    this.tables.set(physical, t);
    // At least as many rows as the table had: about one full read of the table per doubling (at
    // half, bulk loads on SQLite ran 10 to 20% slower, waiting on the analyses' write lock).
    if (t.written >= Math.max(MIN_CHANGE, t.rows)) {
      t.written = 0;
      this.pending.add(physical);
      if (!this.running) this.start([]);
    }
  }

  private start(first: string[] | null): void {
    if (this.closed) return;
    this.running = (async () => {
      let batch: string[] | null = first;
      while (batch === null || batch.length > 0 || this.pending.size > 0) {
        if (batch !== null) {
          batch.push(...this.pending);
          this.pending.clear();
        }
        try {
          for (const [table, rows] of await this.refresh(batch)) {
            const t = this.tables.get(table) ?? { rows: 0, written: 0 };
            t.rows = rows;
            this.tables.set(table, t);
          }
        } catch (err) {
          // A table dropped meanwhile, a closing database: the next writes try again.
          if (!this.closed) this.onError(err);
        }
        batch = [];
        if (this.closed) break;
      }
    })().finally(() => {
      this.running = null;
    });
  }

  async settled(): Promise<void> {
    while (this.running) await this.running;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.settled();
  }
}
