import type SqliteDatabase from 'better-sqlite3';
import { CompiledQuery, type Driver, SqliteDialect } from 'kysely';
import { ZONE_SHIFT_FUNCTION, zoneShiftAt } from './aggregate-sql.ts';

/** What every connection needs for SQLite to answer as PostgreSQL does. */
export function sameSemantics(conn: SqliteDatabase.Database): void {
  conn.pragma('busy_timeout = 5000');
  // LIKE is case-sensitive on PostgreSQL; make SQLite agree.
  conn.pragma('case_sensitive_like = ON');
  // SQLite's lower() folds ASCII only; PostgreSQL's folds every letter. Make iLike agree.
  conn.function('lower', { deterministic: true }, (s: unknown) => (typeof s === 'string' ? s.toLowerCase() : s));
  // SQLite has no time-zone data: a zone's offset at an instant outside the years aggregates' statements carry (aggregate-sql.ts).
  conn.function(ZONE_SHIFT_FUNCTION, { deterministic: true }, (instant: unknown, zone: unknown) => zoneShiftAt(instant, zone));
}

/**
 * How much of the database file the request reader asks to map: all of it (1 TiB stands for any
 * file). SQLite cuts the setting to the most its build allows, SQLITE_MAX_MMAP_SIZE: 0x7fff0000
 * (2 GiB) in better-sqlite3's own build, the whole file in one built with it raised. Pages past the
 * map are read with pread(2) into the connection's page cache (READER_CACHE_KIB): at
 * 2,000,000 rows in a 3 GiB file, a get by id cost 16.0 µs past the 2 GiB map against 13.9 with
 * the whole file mapped (docs/decisions.md, Growth: the reader's map).
 */
export const READER_MMAP_REQUEST = 2 ** 40;

/**
 * The most the request reader's page cache may hold, in KiB: 512 MiB. Pages inside the map never
 * enter it (a mapped page is read in place), so what it holds is the pages past the map, read with
 * pread(2), and pages whose latest version is in the write-ahead log (at most its size, 40 MiB
 * before the backstop checkpoint). With the build's 16 MB (4,000 pages) a random get by id on a
 * 2,000,000-row table in a 3 GiB file read again from the file nearly every page past the map it
 * needed, and this machine's OS, which drops file pages no process maps, read them from the disk.
 * The tables and indexes past the map there take 440 MiB. The cache is heap (RssAnon), allocated a
 * page at a time as pages are read, so a file inside the map costs nothing more; SQLite empties it
 * when another connection commits (the next read starts afresh).
 */
export const READER_CACHE_KIB = 512 * 1024;

/**
 * The connection for reads outside transactions. It maps the database file into memory rather
 * than copy each page it reads out of the OS's cache: a random row by id in a 260 MB file took
 * 9.5 µs instead of 12 (a scratch loop over 200,000 rows), and the service spent 13% less CPU on a
 * get by id, 6-8% on a list page (two builds side by side). The map first covered 256 MiB: a table
 * loaded after the file had passed that size was read by pread, and a get by id on a 1,000,000-row
 * table cost 1.46x what it did on a 200,000-row one in the same file (1.15x with the whole file
 * mapped; docs/decisions.md, Read path per request). The mapped pages are the OS's file cache, the
 * same pages a pread would have brought in: counted in the process's RSS as RssFile once touched,
 * shared, clean and dropped by the kernel when memory is short, never the process's own heap
 * (RssAnon). Exports read on connections of their own without the map: a whole-table read would
 * map it all.
 */
export function requestReader(Sqlite: typeof SqliteDatabase, file: string): SqliteDatabase.Database {
  const conn = new Sqlite(file, { readonly: true });
  conn.pragma(`mmap_size = ${READER_MMAP_REQUEST}`);
  conn.pragma(`cache_size = -${READER_CACHE_KIB}`);
  sameSemantics(conn);
  return conn;
}

/**
 * The main connection's turns between the query builder and the group commit (group-commit.ts).
 * The group commit's transaction runs at once, outside the builder, when the builder neither holds
 * the connection nor waits for it (most of the time: a single-row write takes no builder
 * transaction), rather than take the connection through the builder: that cost a Kysely instance
 * and a round of promises for each group (2.5% of a patch's CPU, issue 27). While it runs, the
 * builder's users wait for it to end; while they hold or wait, a group takes the builder's way.
 */
export class MainConnectionGate {
  /** The builder's users holding the connection or waiting for it. */
  private builders = 0;
  /** A transaction running outside the builder: settled (never rejected) once it has ended. */
  private outside: Promise<void> | undefined;

  /** Runs `work` (in a microtask) when the connection is free of the builder, answering its promise; else undefined. */
  runIfFree(work: () => Promise<void>): Promise<void> | undefined {
    if (this.builders > 0 || this.outside) return undefined;
    let ended!: () => void;
    this.outside = new Promise<void>((resolve) => {
      ended = () => {
        this.outside = undefined;
        resolve();
      };
    });
    // In a microtask, as through the builder: what the running code writes next joins before the transaction begins.
    const running = Promise.resolve().then(work);
    running.then(ended, ended);
    return running;
  }

  /** The driver's users counted, and made to wait while a transaction runs outside it. */
  wrap(driver: Driver): Driver {
    const acquire = driver.acquireConnection.bind(driver);
    const release = driver.releaseConnection.bind(driver);
    driver.acquireConnection = () => {
      this.builders++;
      return this.outside ? this.whenFree().then(acquire) : acquire();
    };
    // (SQLite's driver frees the connection at once, within the call: no group can begin in between.)
    driver.releaseConnection = (connection) => {
      this.builders--;
      return release(connection);
    };
    return driver;
  }

  private async whenFree(): Promise<void> {
    while (this.outside) await this.outside;
  }
}

/**
 * SQLite transactions take the write lock when they begin (BEGIN IMMEDIATE), waiting for it as
 * long as busy_timeout allows. A deferred one that read first could not take it later if another
 * connection (the statistics worker) had committed meanwhile: SQLite would fail it at once.
 * `gate`: the connection's turns with the group commit.
 */
export class ImmediateSqliteDialect extends SqliteDialect {
  constructor(
    config: ConstructorParameters<typeof SqliteDialect>[0],
    private readonly gate?: MainConnectionGate,
  ) {
    super(config);
  }

  override createDriver(): Driver {
    const driver = super.createDriver();
    driver.beginTransaction = async (connection) => {
      await connection.executeQuery(CompiledQuery.raw('begin immediate'));
    };
    return this.gate ? this.gate.wrap(driver) : driver;
  }
}

/** The main connection: every write, and the reads of transactions. */
export function mainConnection(Sqlite: typeof SqliteDatabase, file: string): SqliteDatabase.Database {
  const raw = new Sqlite(file);
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = NORMAL');
  raw.pragma('cache_size = -65536');
  raw.pragma('foreign_keys = ON');
  sameSemantics(raw);
  return raw;
}
