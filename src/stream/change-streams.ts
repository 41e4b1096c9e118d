import type { PassThrough } from 'node:stream';
import type { RowFilter } from '../domain/row-filter.ts';
import type { ChangeStreamPlan } from '../plan/change-plans.ts';
import { matchesRowFilter } from '../domain/row-filter-match.ts';
import type { RowRecord } from '../domain/row.ts';
import { changeJson } from '../render/change-json.ts';
import { rowEntriesBefore } from '../store/change-history.ts';
import type { ChangeLog } from '../store/change-log.ts';
import type { Database } from '../store/database.ts';
import type { Meta } from '../store/meta-schema.ts';

/**
 * The change streams of one instance (issue 31, CONTRACT §14): each open stream sends its table's
 * change log from its position on, as Server-Sent Events. Every stream reads the log itself, by the
 * query the feed pages with (ChangeLog.read), so a stream and the feed see the same changes in the
 * same order, and a client that resumes from the last id it got misses and repeats nothing; there is
 * no second, in-memory path that could disagree with the log. What the instance keeps is only when
 * to look:
 *
 * - woken when this instance commits entries of a table (ChangeLog.committed), and when another
 *   instance says it did (Database.changeSignals: PostgreSQL's NOTIFY); and every second anyway
 *   (twice a second while the signals from other instances are not heard), so a lost signal costs
 *   at most that;
 * - streams of a table at the same position share one read (`reads`): a thousand streams of a
 *   table woken by one commit make one query, and each change's event text is made once;
 * - a stream writes no more while its client has not taken what it was sent (`write` false): the
 *   log is the buffer, so a slow client holds at most a batch and the socket's buffers. One that
 *   takes nothing for `stallMs` is cut off; it resumes from its last id.
 * - the keys of open streams are looked at every TICK_MS: a key revoked, expired or deleted ends
 *   its streams within a second (on another instance too: the metadata version moves by NOTIFY);
 * - a comment line every `heartbeatMs` of silence; `close()` (server shutdown) ends every stream, and
 *   the streams of a table deleted end once they have sent its last changes (found when looking).
 */

/** Changes read at a time. */
const BATCH = 100;
/** How often keys, heartbeats and the looks below are seen to. */
const TICK_MS = 250;
/**
 * How often every table with streams is looked at anyway, while other instances' signals are heard,
 * and while they are not. Also for what no commit announces: on PostgreSQL a write that took numbers
 * and failed (a unique violation) held readers below them until it ended, and its end wakes no one.
 */
const LOOK_MS = { live: 1000, deaf: 500 };

export interface ChangeStreamOptions {
  /** Silence after which a comment line is sent (CONTRACT §14: at least every 15 s). */
  heartbeatMs: number;
  /** A client that takes nothing of what it was sent for this long is cut off. */
  stallMs: number;
  warn: (message: string) => void;
}

/** One change as the streams share it: its event text made once, its row parsed when a filter first needs it. */
interface Entry {
  sequence: number;
  change: Meta['rh_changes'];
  frame: string;
  after?: RowRecord | null;
  /** The row before this change: null when it did not exist, undefined when the log no longer says. */
  before?: Promise<RowRecord | null | undefined>;
}

/** Where a stream's events go: the response body, with what the HTTP layer knows of its socket. */
export interface StreamOutput {
  body: PassThrough;
  /** Bytes sent and not yet taken by the client's socket (the body's buffers and the response's). */
  buffered(): number;
  /** Cuts the connection (a client that takes nothing). */
  abort(): void;
}

class Stream {
  pumping = false;
  again = false;
  closed = false;
  waiting = false;
  /** Its table is gone: the stream ends once it has sent what the log holds (the table's last deletes). */
  tableGone = false;
  lastWrite = Date.now();

  constructor(
    readonly plan: ChangeStreamPlan,
    readonly out: StreamOutput,
    public position: number,
  ) {}

  write(text: string): boolean {
    this.lastWrite = Date.now();
    return this.out.body.write(text);
  }
}

interface KeyState {
  revokedAt: number | null;
  expiresAt: number | null;
}

export class ChangeStreams {
  private readonly byTable = new Map<string, Set<Stream>>();
  /** Reads under way, by table and position. */
  private readonly reads = new Map<string, Map<number, Promise<Entry[]>>>();
  private readonly keys = new Map<string, KeyState | null>();
  private keysVersion: number | undefined;
  private ticker: NodeJS.Timeout | undefined;
  private lastLook = Date.now();
  private closing = false;
  private readonly stopHearing: () => void;
  private readonly onCommit = (tableId: string) => {
    this.wake(tableId);
    this.database.changeSignals.announce(tableId);
  };

  constructor(
    private readonly database: Database,
    private readonly log: ChangeLog,
    private readonly options: ChangeStreamOptions,
  ) {
    log.committed.on('table', this.onCommit);
    this.stopHearing = database.changeSignals.listen((tableId) => (tableId === null ? this.wakeAll() : this.wake(tableId)));
  }

  /** Streams open now (of a table, or of all), and the most bytes one of them holds unsent (tests watch it). */
  stats(tableId?: string): { open: number; mostBuffered: number } {
    let open = 0;
    let mostBuffered = 0;
    for (const [id, streams] of this.byTable) {
      if (tableId !== undefined && id !== tableId) continue;
      for (const s of streams) {
        open++;
        mostBuffered = Math.max(mostBuffered, s.out.buffered());
      }
    }
    return { open, mostBuffered };
  }

  /** Starts a stream: its first lines, then the changes after `plan.position`. */
  open(plan: ChangeStreamPlan, out: StreamOutput): void {
    const stream = new Stream(plan, out, plan.position);
    if (this.closing) {
      out.body.end();
      return;
    }
    let streams = this.byTable.get(plan.tableId);
    if (!streams) this.byTable.set(plan.tableId, (streams = new Set()));
    streams.add(stream);
    out.body.once('close', () => this.forget(stream));
    // A browser's EventSource waits 1 s before it reconnects; the comment sends the headers at once.
    stream.write('retry: 1000\n: open\n\n');
    this.ticker ??= setInterval(() => this.tick(), TICK_MS).unref();
    void this.pump(stream);
  }

  /** Ends every stream (the server stops) and stops waking. */
  close(): void {
    this.closing = true;
    for (const streams of this.byTable.values()) for (const s of streams) this.end(s);
    this.byTable.clear();
    clearInterval(this.ticker);
    this.ticker = undefined;
    this.log.committed.off('table', this.onCommit);
    this.stopHearing();
  }

  private end(stream: Stream, cut = false): void {
    if (stream.closed) return;
    stream.closed = true;
    if (cut) stream.out.abort();
    else stream.out.body.end();
    this.forget(stream);
  }

  private forget(stream: Stream): void {
    stream.closed = true;
    const streams = this.byTable.get(stream.plan.tableId);
    if (!streams) return;
    streams.delete(stream);
    if (streams.size === 0) this.byTable.delete(stream.plan.tableId);
    if (this.byTable.size === 0 && this.ticker) {
      clearInterval(this.ticker);
      this.ticker = undefined;
      this.keys.clear();
    }
  }

  private wake(tableId: string): void {
    // A read under way may have begun before what woke the streams: those woken read anew.
    this.reads.delete(tableId);
    const streams = this.byTable.get(tableId);
    if (streams) for (const s of streams) void this.pump(s);
  }

  private wakeAll(): void {
    for (const tableId of [...this.byTable.keys()]) this.wake(tableId);
  }

  /** Sends the stream what the log holds after its position, until it holds no more; a wake meanwhile makes it look again. */
  private async pump(stream: Stream): Promise<void> {
    if (stream.pumping) {
      stream.again = true;
      return;
    }
    stream.pumping = true;
    try {
      do {
        stream.again = false;
        for (;;) {
          const entries = await this.read(stream.plan.tableId, stream.position);
          if (stream.closed || entries.length === 0) break;
          // A gap: numbers a failed transaction took, or entries retention deleted under a slow
          // client. Then what it missed is gone: the stream ends, and the client's reconnect hears 410.
          if (entries[0].sequence > stream.position + 1 && stream.position < (await this.log.purgedThrough(this.database.db, stream.plan.tableId))) {
            this.end(stream);
            return;
          }
          for (const entry of entries) {
            if (stream.closed) return;
            if ((await this.keeps(stream.plan.filter, entry)) && !stream.write(entry.frame) && !(await this.drained(stream))) {
              this.end(stream, true);
              return;
            }
            stream.position = entry.sequence;
          }
        }
      } while (stream.again && !stream.closed);
      if (stream.tableGone) this.end(stream);
    } catch (err) {
      this.options.warn(`change stream of table ${stream.plan.tableId}: ${(err as Error).message}`);
      this.end(stream);
    } finally {
      stream.pumping = false;
    }
  }

  /** Whether the client took what it was sent within stallMs. */
  private drained(stream: Stream): Promise<boolean> {
    stream.waiting = true;
    return new Promise((resolve) => {
      const body = stream.out.body;
      const done = (ok: boolean) => {
        clearTimeout(timer);
        body.off('drain', taken);
        body.off('close', gone);
        stream.waiting = false;
        resolve(ok);
      };
      const taken = () => done(true);
      const gone = () => done(false);
      const timer = setTimeout(gone, this.options.stallMs);
      body.once('drain', taken);
      body.once('close', gone);
    });
  }

  /** The table's entries after `after`: one read shared by the streams at that position. */
  private read(tableId: string, after: number): Promise<Entry[]> {
    let table = this.reads.get(tableId);
    if (!table) this.reads.set(tableId, (table = new Map()));
    let reading = table.get(after);
    if (!reading) {
      const reads = table;
      reading = this.log
        .read(this.database.db, tableId, after, BATCH)
        .then((changes) => changes.map((change) => ({ sequence: Number(change.sequence), change, frame: `id: ${Number(change.sequence)}\nevent: change\ndata: ${changeJson(change)}\n\n` })))
        .finally(() => {
          reads.delete(after);
          if (reads.size === 0 && this.reads.get(tableId) === reads) this.reads.delete(tableId);
        });
      table.set(after, reading);
    }
    return reading;
  }

  /** CONTRACT §14: a filter keeps the changes whose row matches before or after the change. */
  private async keeps(filter: RowFilter | null, entry: Entry): Promise<boolean> {
    if (!filter) return true;
    entry.after ??= entry.change.row === null ? null : (JSON.parse(entry.change.row) as RowRecord);
    if (entry.after && matchesRowFilter(filter, entry.after)) return true;
    if (entry.change.type === 'create') return false;
    entry.before ??= this.before(entry.change);
    const before = await entry.before;
    // The log no longer holds the row's earlier state (retention): kept rather than lost.
    return before === undefined || (before !== null && matchesRowFilter(filter, before));
  }

  /** The row as it was before the change: its entry before, from the log. */
  private async before(change: Meta['rh_changes']): Promise<RowRecord | null | undefined> {
    const [previous] = await rowEntriesBefore(this.database.db, change.tableId, change.rowId, Number(change.sequence), 1);
    if (!previous) return undefined;
    return previous.row === null ? null : (JSON.parse(previous.row) as RowRecord);
  }

  private tick(): void {
    const now = Date.now();
    for (const streams of this.byTable.values()) {
      for (const s of streams) {
        if (!s.waiting && now - s.lastWrite >= this.options.heartbeatMs) s.write(': heartbeat\n\n');
      }
    }
    if (now - this.lastLook >= (this.database.changeSignals.live() ? LOOK_MS.live : LOOK_MS.deaf)) {
      this.lastLook = now;
      this.look().catch((err) => this.options.warn(`change streams, looking at their tables: ${(err as Error).message}`));
    }
    this.checkKeys(now).catch((err) => this.options.warn(`change streams, checking keys: ${(err as Error).message}`));
  }

  /** Every stream looks in the log; those of a table deleted end once they have sent its last changes. */
  private async look(): Promise<void> {
    const ids = [...this.byTable.keys()];
    if (ids.length === 0) return;
    const rows = await this.database.db.selectFrom('rh_tables').select('id').where('id', 'in', ids).execute();
    const existing = new Set(rows.map((r) => r.id as string));
    for (const id of ids) {
      if (existing.has(id)) continue;
      for (const s of this.byTable.get(id) ?? []) s.tableGone = true;
    }
    this.wakeAll();
  }

  private checking = false;

  /** Ends the streams of keys revoked, expired or deleted; their rows are read again when the metadata may have changed. */
  private async checkKeys(now: number): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      const wanted = new Set<string>();
      for (const streams of this.byTable.values()) for (const s of streams) wanted.add(s.plan.keyId);
      const version = this.database.metadataVersion();
      const stale = version === undefined || version !== this.keysVersion;
      const load = stale ? [...wanted] : [...wanted].filter((id) => !this.keys.has(id));
      if (load.length > 0) {
        const loaded = await this.loadKeys(load);
        if (stale) this.keys.clear();
        for (const [id, state] of loaded) this.keys.set(id, state);
        this.keysVersion = version;
      }
      for (const streams of [...this.byTable.values()]) {
        for (const s of [...streams]) {
          const key = this.keys.get(s.plan.keyId);
          if (key !== undefined && !usable(key, now)) this.end(s);
        }
      }
    } finally {
      this.checking = false;
    }
  }

  /** Whether a key exists and is neither revoked nor expired now (a signed stream URL's key). */
  async keyUsable(keyId: string): Promise<boolean> {
    const [[, state]] = await this.loadKeys([keyId]);
    return usable(state, Date.now());
  }

  /** The keys' states (null: no such key). */
  private async loadKeys(ids: string[]): Promise<[string, KeyState | null][]> {
    const rows = await this.database.db.selectFrom('rh_api_keys').select(['id', 'revokedAt', 'expiresAt']).where('id', 'in', ids).execute();
    const found = new Map<string, KeyState>(rows.map((r) => [r.id as string, { revokedAt: epoch(r.revokedAt), expiresAt: epoch(r.expiresAt) }]));
    return ids.map((id) => [id, found.get(id) ?? null]);
  }
}

const epoch = (at: string | null) => (at === null ? null : Date.parse(at));

/** As the key check (auth-store.ts): a revocation or expiry takes effect at the time it names. */
const usable = (key: KeyState | null, now: number) => key !== null && !(key.revokedAt !== null && key.revokedAt <= now) && !(key.expiresAt !== null && key.expiresAt <= now);
