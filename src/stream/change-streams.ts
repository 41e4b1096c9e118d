import type { RowFilter } from '../domain/row-filter.ts';
import type { ChangeStreamPlan } from '../plan/change-plans.ts';
import { type LinkedMatches, linkQuantifiers, matchesRowFilter, mayChangeFor, mayHaveMatched } from '../domain/row-filter-match.ts';
import type { RowRecord } from '../domain/row.ts';
import { changeJson } from '../render/change-json.ts';
import { rowEntriesBefore } from '../store/change-history.ts';
import { type ChangeLog, entriesAfter } from '../store/change-log.ts';
import type { Database } from '../store/database.ts';
import { linkedMatches } from '../store/links/linked-matches.ts';
import { type Grant, coversTable, hasScope } from '../domain/access.ts';
import { epoch, inForce, keyAccess } from '../store/auth-store.ts';
import type { Meta } from '../store/meta-schema.ts';
import { type RoundTrace, roundTrace, traceNow } from './round-trace.ts';

/**
 * The change streams of one instance (issue 31, CONTRACT §14): each open stream sends its table's
 * change log from its position on, as Server-Sent Events. Everything a stream sends was read from
 * the log by the query the feed pages with (entriesAfter, up to what a reader may pass:
 * ChangeLog.readableThrough), so a stream and the feed see the same changes in the same order, and
 * a client that resumes from the last id it got misses and repeats nothing; there is no second,
 * in-memory path that could disagree with the log. How the reads are shared:
 *
 * - each table with streams has one reader (`follow`) at a position, its `tail`: woken, it reads
 *   the entries after the tail (a batch at a time) and hands each batch to every stream of the
 *   table standing at the tail (`live`). A thousand live streams woken by a commit cost one read,
 *   and each batch's event text is made once, as one buffer every unfiltered stream writes as it
 *   is (one socket write per stream per read); streams with the same filter share the text it keeps. It reads at most every ROUND_MS
 *   (unless behind; more with many streams, ROUND_SHARE): a table written a thousand times a
 *   second is read at most a hundred times, each read taking what committed since the last, and
 *   each stream is written once per read;
 * - the reader keeps its last reads (RECENT_BYTES of event text; what it read from the log, as it
 *   read it): a stream a little behind the tail (one whose client held it back a moment, one
 *   resuming from a recent id) catches up from them, sent the same buffers the live streams were,
 *   with no read of the log and no event text made for it alone;
 * - a stream further behind catches up on its own, reading the log from its position (reads of
 *   streams at one position shared) up to where the reader's recent reads begin, then from them,
 *   and joins the live ones when it stands at the tail;
 * - the reader is woken when this instance commits entries of the table (ChangeLog.committed), and
 *   when another instance says it did (Database.changeSignals: PostgreSQL's NOTIFY); and every
 *   second anyway (twice a second while the signals from other instances are not heard), so a
 *   lost signal costs at most that;
 * - a stream is sent no more while its client has not taken what it was sent (the connection holds
 *   more than its socket's high-water mark, 16 KiB): it leaves the live ones, and once its client
 *   has taken it, catches up (from the recent reads, or from the log, which is the buffer): a slow
 *   client holds at most one read (BATCH changes) and the socket's buffer. One that takes nothing
 *   for `stallMs` is cut off; it resumes from its last id.
 * - the keys of open streams are looked at every TICK_MS: a key revoked, expired or deleted, or one
 *   whose scopes or tables no longer let it read the stream's table (CONTRACT §12), ends
 *   its streams within a second (on another instance too: the metadata version moves by NOTIFY);
 * - a comment line every `heartbeatMs` of silence; `close()` (server shutdown) ends every stream, and
 *   the streams of a table deleted end once they have sent its last changes (found when looking).
 */

/** Changes read at a time. */
const BATCH = 100;
/**
 * The shortest time between two reads of a table's reader (unless it is behind): under a steady
 * stream of writes each read takes what committed in that time, and each live stream is written
 * once per read, not once per commit. A wake after a quiet spell reads at once.
 *
 * With many live streams the time grows, so that writing to them takes at most about a
 * 1/ROUND_SHARE of the time: the time between reads is at least ROUND_SHARE times the CPU handing
 * the last reads to the live streams took (a moving average), up to ROUND_MAX_MS. Each write to a
 * stream costs the same however many changes it holds; so a thousand streams of a table written
 * a thousand times a second are written, say, 40 times a second each rather than 100, and each
 * change waits up to 25 ms for its read rather than 10. CPU, not the clock: on a busy machine the
 * process is off its core for part of a pass, and timed by the clock every round stretched to its
 * cap whatever the streams (one stream: 77 ms between reads where 10 were meant).
 */
const ROUND_MS = 10;
const ROUND_SHARE = 5;
const ROUND_MAX_MS = 50;
/**
 * How much event text of its last reads a table's reader keeps (at least its last read), for the
 * streams a little behind it to catch up from: at 1,000 single-row writes a second of the bench's
 * rows, about the last second and a half.
 */
const RECENT_BYTES = 1024 * 1024;
/** Reads waiting for the judgement of a filter through links before its streams leave the live ones (judgeInTurn). */
const MAX_WAITING_READS = 20;
/** How long a stream catching up waits when the log holds nothing it may pass yet. */
const WAIT_MS = 50;
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
  bytes: number;
  after?: RowRecord | null;
  /** The row before this change: null when it did not exist, undefined when the log no longer says. */
  before?: Promise<RowRecord | null | undefined>;
  /** An update's `changedFields`, parsed once (null: the entry does not say). */
  written?: string[] | null;
}

/** The reads waiting for the judgement of one filter through links, and whether one is under way (judgeInTurn). */
interface JudgingQueue {
  filter: RowFilter;
  reads: Read[];
  running: boolean;
}

/**
 * A read's event text as one write: the text of its entries a stream's filter keeps (`data`; null
 * when it keeps none), and where each entry's text begins in it (`starts`, by entry; a stream that
 * stands inside the read is sent the rest, a view of the same buffer).
 */
interface Text {
  after: number;
  last: number;
  entries: Entry[];
  starts: number[];
  data: Buffer | null;
}

/** A read of the log: its entries after `after`, through `through` (all of them when fewer than BATCH). */
interface Read {
  after: number;
  entries: Entry[];
  through: number;
  /** The bytes of its entries' event text. */
  bytes: number;
  /** Its text for the streams without a filter, made once however many send it. */
  plain?: Text;
  /** …and by the filter that keeps them. */
  filtered: Map<string, Promise<Text>>;
}

/**
 * The response a stream writes its events to (Node's ServerResponse has all of it): write answers
 * false, and writableNeedDrain holds, once the connection holds more than it should, until 'drain'.
 */
export interface StreamBody {
  write(data: string | Buffer): boolean;
  end(): void;
  readonly writableNeedDrain: boolean;
  once(event: 'drain' | 'close', listener: () => void): unknown;
  off(event: 'drain' | 'close', listener: () => void): unknown;
}

/** Where a stream's events go: the response, with what the HTTP layer knows of its socket. */
export interface StreamOutput {
  body: StreamBody;
  /** Bytes sent and not yet taken by the client's socket. */
  buffered(): number;
  /** Cuts the connection (a client that takes nothing). */
  abort(): void;
  /** The client's port, for traces (round-trace.ts). */
  readonly port?: number;
}

class Stream {
  /** Sent what its table's reader hands it (live), reading the log on its own (catching up), or waiting for its client (held). */
  mode: 'live' | 'catching' | 'held' = 'catching';
  closed = false;
  waiting = false;
  lastWrite = Date.now();
  /** What its filter is known by among the table's streams ('': no filter). */
  readonly filterKey: string;
  /**
   * Whether its filter looks through links (`_some`, `_none`, `_every`): judged by statements, its
   * reads are judged in turn without the table's reader waiting for them (judgeInTurn).
   */
  readonly throughLinks: boolean;

  constructor(
    readonly plan: ChangeStreamPlan,
    readonly out: StreamOutput,
    public position: number,
  ) {
    this.filterKey = plan.filter === null ? '' : JSON.stringify(plan.filter);
    this.throughLinks = linkQuantifiers(plan.filter).length > 0;
  }

  write(data: string | Buffer): boolean {
    this.lastWrite = Date.now();
    return this.out.body.write(data);
  }
}

/** The streams of one table, and its reader. */
class TableStreams {
  readonly all = new Set<Stream>();
  /** The streams standing at the tail: the reader hands them what it reads. */
  readonly live = new Set<Stream>();
  reading = false;
  /** Woken while reading: it reads again. */
  dirty = false;
  /** When the reader last read (performance.now()). */
  lastRead = 0;
  /** The CPU handing a read to the unfiltered live streams took, in ms (a moving average). */
  deliveryMs = 0;
  /** The table was found deleted: its streams end once they have sent what the log holds. */
  gone = false;
  /** …and the reader has read it all and ended its live streams. */
  finished = false;
  /** Reads of streams catching up, by position. */
  readonly reads = new Map<number, Promise<Read>>();
  /** The reads waiting for the judgement of each filter through links of its live streams, by filter (judgeInTurn). */
  readonly judging = new Map<string, JudgingQueue>();
  /**
   * The reader's last reads, oldest first, each beginning where the one before ended (the last one
   * ends at the tail), RECENT_BYTES of event text at most (and at least the last read).
   */
  recent: Read[] = [];
  recentBytes = 0;
  /** Reads streams catching up made: of the log, and of the reader's recent reads (stats). */
  logReads = 0;
  recentReads = 0;
  /** While a trace is listened to: when this instance's commits woke the reader since its last read, and what the round in hand has met. */
  commits: number[] = [];
  trace: RoundTrace | undefined;

  constructor(
    readonly id: string,
    /**
     * How far the reader has read: the log holds no entry at or below it still to commit. It starts
     * where a stream without a cursor would (ChangeLog.startingPoint), when the table's first stream opens.
     */
    public tail: number,
  ) {}
}

interface KeyState {
  revokedAt: number | null;
  expiresAt: number | null;
  /** What the key may do now (CONTRACT §12): a stream of a table it may no longer read ends. */
  grant: Grant;
}

export class ChangeStreams {
  private readonly tables = new Map<string, TableStreams>();
  private readonly keys = new Map<string, KeyState | null>();
  private keysVersion: number | undefined;
  private ticker: NodeJS.Timeout | undefined;
  private lastLook = Date.now();
  private closing = false;
  private readonly stopHearing: () => void;
  private readonly onCommit = (tableId: string) => {
    if (roundTrace.hasSubscribers) this.tables.get(tableId)?.commits.push(traceNow());
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

  /**
   * Streams open now (of a table, or of all): how many, how many are sent what their table's reader
   * reads (live) and how many wait for their client (held), the most bytes one of them holds
   * unsent, and how many reads the streams catching up made, of the log and of the reader's recent
   * reads (tests watch them).
   */
  stats(tableId?: string): { open: number; live: number; held: number; mostBuffered: number; logReads: number; recentReads: number } {
    const stats = { open: 0, live: 0, held: 0, mostBuffered: 0, logReads: 0, recentReads: 0 };
    for (const [id, table] of this.tables) {
      if (tableId !== undefined && id !== tableId) continue;
      stats.logReads += table.logReads;
      stats.recentReads += table.recentReads;
      for (const s of table.all) {
        stats.open++;
        if (s.mode === 'live') stats.live++;
        if (s.mode === 'held') stats.held++;
        stats.mostBuffered = Math.max(stats.mostBuffered, s.out.buffered());
      }
    }
    return stats;
  }

  /**
   * Starts a stream: its first lines, then the changes after `plan.position`. `start` is where a
   * stream without a cursor would start now (ChangeLog.startingPoint, asked for by the route before
   * it answers): the table's reader starts there when this is its first stream.
   */
  open(plan: ChangeStreamPlan, out: StreamOutput, start: number): void {
    const stream = new Stream(plan, out, plan.position);
    if (this.closing) {
      out.body.end();
      return;
    }
    let table = this.tables.get(plan.tableId);
    if (!table) this.tables.set(plan.tableId, (table = new TableStreams(plan.tableId, start)));
    table.all.add(stream);
    out.body.once('close', () => this.forget(stream));
    // A browser's EventSource waits 1 s before it reconnects; the comment sends the headers at once.
    stream.write('retry: 1000\n: open\n\n');
    this.ticker ??= setInterval(() => this.tick(), TICK_MS).unref();
    void this.catchUp(table, stream);
  }

  /** Ends every stream (the server stops) and stops waking. */
  close(): void {
    this.closing = true;
    for (const table of this.tables.values()) for (const s of table.all) this.end(s);
    this.tables.clear();
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
    const table = this.tables.get(stream.plan.tableId);
    if (!table) return;
    table.all.delete(stream);
    table.live.delete(stream);
    if (table.all.size === 0) this.tables.delete(table.id);
    if (this.tables.size === 0 && this.ticker) {
      clearInterval(this.ticker);
      this.ticker = undefined;
      this.keys.clear();
    }
  }

  private wake(tableId: string): void {
    const table = this.tables.get(tableId);
    if (table) void this.follow(table);
  }

  private wakeAll(): void {
    for (const table of [...this.tables.values()]) void this.follow(table);
  }

  /**
   * The table's reader: reads the log after its tail until it holds no more, handing each batch to
   * the live streams; a wake meanwhile makes it look again. It reads at most every ROUND_MS (more
   * with many live streams: ROUND_SHARE) unless it is behind (its last read was a whole batch).
   */
  private async follow(table: TableStreams): Promise<void> {
    if (table.reading) {
      table.dirty = true;
      return;
    }
    table.reading = true;
    try {
      let behind = false;
      for (;;) {
        const round = Math.min(ROUND_MAX_MS, Math.max(ROUND_MS, ROUND_SHARE * table.deliveryMs));
        const wait = behind ? 0 : table.lastRead + round - performance.now();
        // What waits its turn (writes, other tables) goes first; what commits meanwhile joins this read.
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        else if (behind) await new Promise((resolve) => setImmediate(resolve));
        if (this.tables.get(table.id) !== table || table.finished || this.closing) return;
        table.lastRead = performance.now();
        table.dirty = false;
        const gone = table.gone;
        const trace = roundTrace.hasSubscribers ? startTrace(table) : undefined;
        const read = await this.readLog(table.id, table.tail, Number.MAX_SAFE_INTEGER);
        if (trace) trace.readEnd = traceNow();
        const { entries } = read;
        if (entries.length > 0) {
          const after = table.tail;
          // A gap: numbers a failed transaction took, or entries retention deleted under the reader.
          // Then what its streams missed is gone: they end, and their clients' reconnects hear 410.
          if (entries[0].sequence > after + 1 && after < (await this.log.purgedThrough(this.database.db, table.id))) {
            for (const s of [...table.live]) this.end(s);
            // Nor may a stream catch up across the gap from the recent reads: it reads the log, and ends there.
            table.recent = [];
            table.recentBytes = 0;
          } else keep(table, read);
          table.tail = entries[entries.length - 1].sequence;
          table.trace = trace;
          await this.deliver(table, read);
          if (trace) {
            table.trace = undefined;
            trace.last = table.tail;
            roundTrace.publish(trace);
          }
        } else if (gone) {
          table.finished = true;
          for (const s of [...table.live]) {
            if (s.throughLinks && table.judging.has(s.filterKey)) {
              // Reads still wait for its filter's judgement: it sends them itself (catchUp), and ends there.
              table.live.delete(s);
              s.mode = 'catching';
              void this.catchUp(table, s);
            } else this.end(s);
          }
          return;
        }
        behind = entries.length === BATCH;
        // A table deleted: read on until the log holds no more of it.
        if (!behind && !table.dirty && !gone) return;
      }
    } catch (err) {
      this.options.warn(`change streams of table ${table.id}: ${(err as Error).message}`);
      for (const s of [...table.live]) this.end(s);
    } finally {
      table.reading = false;
    }
  }

  /** Hands a batch the reader read to each live stream: one write of the same buffer to every stream with the same filter. */
  private async deliver(table: TableStreams, read: Read): Promise<void> {
    const filtered: Promise<void>[] = [];
    const throughLinks = new Map<string, RowFilter>();
    const started = performance.now();
    const cpu = process.cpuUsage();
    const trace = table.trace;
    if (trace) {
      plainText(read);
      trace.textEnd = traceNow();
    }
    for (const s of [...table.live]) {
      // The unfiltered streams are sent theirs at once.
      if (s.filterKey === '') {
        this.sendLive(table, s, plainText(read));
        if (trace) traceWrite(trace, s);
      } else if (s.throughLinks) {
        throughLinks.set(s.filterKey, s.plan.filter as RowFilter);
      } else {
        filtered.push(
          this.textFor(read, s).then(
            (text) => {
              if (s.mode === 'live' && !s.closed) this.sendLive(table, s, text);
            },
            (err) => this.failed(s, err),
          ),
        );
      }
    }
    for (const [key, filter] of throughLinks) this.judgeInTurn(table, key, filter, read);
    // The CPU it took, not the time: on a busy machine the process is not on a core for all of the
    // pass, and that time would stretch every round to its cap (of all threads: the least of the two).
    const used = process.cpuUsage(cpu);
    const took = Math.min(performance.now() - started, (used.user + used.system) / 1000);
    table.deliveryMs = 0.8 * table.deliveryMs + 0.2 * took;
    if (trace) trace.passCpuMs = took;
    await Promise.all(filtered);
    // What the filtered live streams were sent is not kept with the recent reads (textFor); those sent in turn hold their own.
    read.filtered.clear();
  }

  /**
   * Sends the live streams of a filter through links a read's kept changes once they are judged,
   * after the reads handed to them before, without the table's reader waiting: the statements that
   * judge the linked rows (a changed row may hold thousands of links) hold back those streams only.
   * One judgement runs at a time per filter, of every read waiting for it at once: the further
   * behind, the more changes a statement judges (a customer changed in ten reads is judged once).
   * With more than MAX_WAITING_READS reads waiting, its streams leave the live ones and catch up,
   * as streams whose clients are slow do. A judgement that fails (the filter no longer fits the
   * tables it reaches) ends its streams alone: their clients' reconnects hear why.
   */
  private judgeInTurn(table: TableStreams, key: string, filter: RowFilter, read: Read): void {
    let queue = table.judging.get(key);
    if (!queue) {
      queue = { filter, reads: [], running: false };
      table.judging.set(key, queue);
    }
    queue.reads.push(read);
    if (queue.reads.length > MAX_WAITING_READS) {
      queue.reads = [];
      for (const s of [...table.live]) {
        if (s.filterKey !== key) continue;
        table.live.delete(s);
        s.mode = 'catching';
        void this.catchUp(table, s);
      }
      return;
    }
    if (!queue.running) this.judgeWaiting(table, key, queue).catch((err) => this.options.warn(`change streams of table ${table.id}: ${(err as Error).message}`));
  }

  private async judgeWaiting(table: TableStreams, key: string, queue: JudgingQueue): Promise<void> {
    queue.running = true;
    try {
      while (queue.reads.length > 0) {
        const reads = queue.reads;
        queue.reads = [];
        let kept: boolean[];
        try {
          kept = await this.kept(queue.filter, reads.flatMap((r) => r.entries));
        } catch (err) {
          for (const s of [...table.live]) if (s.filterKey === key) this.failed(s, err);
          continue;
        }
        let at = 0;
        for (const read of reads) {
          const text = textOf(read.after, read.entries, kept.slice(at, (at += read.entries.length)));
          for (const s of [...table.live]) if (s.filterKey === key && !s.closed) this.sendLive(table, s, text);
        }
      }
    } finally {
      queue.running = false;
      if (table.judging.get(key) === queue && queue.reads.length === 0) table.judging.delete(key);
    }
  }

  /** A stream whose changes could not be judged ends, alone (its client's reconnect hears why, or resumes). */
  private failed(s: Stream, err: unknown): void {
    this.options.warn(`change stream of table ${s.plan.tableId}: ${(err as Error).message}`);
    this.end(s);
  }

  /**
   * A read's text as the stream's filter keeps it: made once per filter, but for a recent read
   * (`memo` false), whose text is made again for each filtered stream catching up from it, so
   * that the recent reads hold no more than their own text however many filters there are (but
   * for filters through links, whose judgement costs statements: those keep theirs with the read
   * while it is recent). A judgement that failed is not kept.
   */
  private textFor(read: Read, s: Stream, memo = true): Promise<Text> {
    if (s.filterKey === '') return Promise.resolve(plainText(read));
    let made = read.filtered.get(s.filterKey);
    if (!made) {
      const filter = s.plan.filter;
      const key = s.filterKey;
      made = this.kept(filter, read.entries).then((kept) => textOf(read.after, read.entries, kept));
      if (memo) {
        read.filtered.set(key, made);
        made.catch(() => {
          if (read.filtered.get(key) === made) read.filtered.delete(key);
        });
      }
    }
    return made;
  }

  /**
   * Sends a live stream a read's text, in one write (a shared buffer: the stream holds a reference,
   * not a copy). One whose client has not taken what the last read sent it (its body still full)
   * leaves the live ones instead, until it has; then it catches up (catchUp).
   */
  private sendLive(table: TableStreams, s: Stream, text: Text): void {
    if (!s.out.body.writableNeedDrain) {
      send(s, text);
      return;
    }
    table.live.delete(s);
    s.mode = 'held';
    void this.catchUp(table, s);
  }

  /**
   * Sends a stream that is not at the tail (just opened, or held back by its client) what the log
   * holds from its position up to the tail (from the reader's recent reads as far as they go back),
   * then makes it live.
   */
  private async catchUp(table: TableStreams, s: Stream): Promise<void> {
    try {
      if (s.mode === 'held' && !(await this.heldBack(s))) return;
      for (;;) {
        if (s.closed) return;
        if (s.position >= table.tail) {
          if (table.finished) {
            this.end(s);
            return;
          }
          s.mode = 'live';
          table.live.add(s);
          return;
        }
        const from = s.position;
        const recent = recentAfter(table, from);
        if (recent) {
          // What the reader read after its position, as the live streams were sent it.
          table.recentReads++;
          // A filter through links is judged once per recent read for all its streams catching up (its statements cost more than its text).
          const text = await this.textFor(recent, s, s.throughLinks);
          if (s.closed) return;
          send(s, text);
          if (s.out.body.writableNeedDrain && !(await this.heldBack(s))) return;
          continue;
        }
        // Up to where the recent reads begin (they may move on meanwhile: the next turn looks again).
        const cap = table.recent.length > 0 ? table.recent[0].after : table.tail;
        table.logReads++;
        const read = await this.sharedRead(table, from, cap);
        if (s.closed) return;
        const { entries } = read;
        // A gap (before the first entry read, or up to `through` when none was): numbers a failed
        // transaction took, or entries retention deleted under a slow client. Then what it missed
        // is gone: the stream ends, and the client's reconnect hears 410.
        const next = entries.length > 0 ? entries[0].sequence : read.through + 1;
        if (next > s.position + 1 && s.position < (await this.log.purgedThrough(this.database.db, table.id))) {
          this.end(s);
          return;
        }
        if (entries.length > 0) {
          const text = await this.textFor(read, s);
          if (s.closed) return;
          send(s, text);
        }
        // The read held every entry up to `through`: the numbers between are no entries' (a failed transaction's).
        if (entries.length < BATCH) s.position = Math.max(s.position, read.through);
        // Its client has not taken what it was sent: it waits (the log is the buffer).
        if (s.out.body.writableNeedDrain) {
          if (!(await this.heldBack(s))) return;
        } else if (s.position === from) {
          // Nothing to pass yet (PostgreSQL: a write still to commit holds readers below the tail): a while later.
          await new Promise((resolve) => setTimeout(resolve, WAIT_MS));
        }
      }
    } catch (err) {
      this.options.warn(`change stream of table ${s.plan.tableId}: ${(err as Error).message}`);
      this.end(s);
    }
  }

  /** Waits for a stream's client to take what it was sent (held); false when it did not within stallMs, and was cut off. */
  private async heldBack(s: Stream): Promise<boolean> {
    s.mode = 'held';
    if (!(await this.drained(s))) {
      this.end(s, true);
      return false;
    }
    s.mode = 'catching';
    return true;
  }

  /** The table's entries after `after` up to `cap`: one read shared by the streams catching up from that position. */
  private sharedRead(table: TableStreams, after: number, cap: number): Promise<Read> {
    let reading = table.reads.get(after);
    if (!reading) {
      reading = this.readLog(table.id, after, cap).finally(() => table.reads.delete(after));
      table.reads.set(after, reading);
    }
    return reading;
  }

  /** The log's entries after `after`, up to `cap` and to what a reader may pass (as the feed reads it), at most BATCH. */
  private async readLog(tableId: string, after: number, cap: number): Promise<Read> {
    const db = this.database.db;
    const through = Math.min(cap, await this.log.readableThrough(db, tableId));
    const changes = await entriesAfter(db, tableId, after, through, BATCH);
    const entries = changes.map((change): Entry => {
      const sequence = Number(change.sequence);
      const frame = `id: ${sequence}\nevent: change\ndata: ${changeJson(change)}\n\n`;
      return { sequence, change, frame, bytes: Buffer.byteLength(frame) };
    });
    return { after, entries, through, bytes: entries.reduce((n, e) => n + e.bytes, 0), filtered: new Map() };
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
        resolve(ok && !stream.closed);
      };
      const taken = () => done(true);
      const gone = () => done(false);
      const timer = setTimeout(gone, this.options.stallMs);
      body.once('drain', taken);
      body.once('close', gone);
    });
  }

  /**
   * Which of a read's entries a filter keeps. A filter through links (`_some`, `_none`, `_every`)
   * judges the rows the entries' rows link to, as they are now: the database is asked about all of
   * them at once (linkedMatches), one statement per such condition.
   */
  private async kept(filter: RowFilter | null, entries: Entry[]): Promise<boolean[]> {
    if (filter === null || linkQuantifiers(filter).length === 0) return Promise.all(entries.map((e) => this.keeps(filter, e)));
    // The states judged by their linked rows: after each change, and before each update that may have changed what the filter reads (a deleted row's are not judged: keeps).
    const states = await Promise.all(entries.flatMap((e) => [afterOf(e), e.change.type === 'update' && changedFor(filter, e) ? this.beforeOf(e) : null]));
    const records = states.filter((r): r is RowRecord => r !== null && r !== undefined);
    const linked = await linkedMatches(this.database, filter, records);
    return Promise.all(entries.map((e) => this.keeps(filter, e, linked)));
  }

  /**
   * CONTRACT §14: a filter keeps the changes whose row matches before or after the change. The row
   * before is judged for whether it may have matched: through links, its linked rows are known only
   * as they are now, and what that cannot tell keeps the change (a row updated after its linked row
   * was deleted; a row deleted, whose linked rows may have changed or gone since it matched), so a
   * client following a filtered view learns of every row that may leave it.
   */
  private async keeps(filter: RowFilter | null, entry: Entry, linked?: LinkedMatches): Promise<boolean> {
    if (!filter) return true;
    const after = afterOf(entry);
    if (after && matchesRowFilter(filter, after, linked)) return true;
    if (entry.change.type === 'create') return false;
    // An update that wrote nothing the filter reads: the row before it reads as the row after it (no read of the log).
    if (after && entry.change.type === 'update' && !changedFor(filter, entry)) return mayHaveMatched(filter, after, linked, 'gone');
    const before = await this.beforeOf(entry);
    // The log no longer holds the row's earlier state (retention): kept rather than lost.
    if (before === undefined) return true;
    return before !== null && mayHaveMatched(filter, before, linked, entry.change.type === 'delete' ? 'unknown' : 'gone');
  }

  /** The row before the entry's change, read once (a read that failed is not remembered: the next judgement reads again). */
  private beforeOf(entry: Entry): Promise<RowRecord | null | undefined> {
    entry.before ??= this.before(entry.change).catch((err: unknown) => {
      entry.before = undefined;
      throw err;
    });
    return entry.before;
  }

  /** The row as it was before the change: its entry before, from the log. */
  private async before(change: Meta['rh_changes']): Promise<RowRecord | null | undefined> {
    const [previous] = await rowEntriesBefore(this.database.db, change.tableId, change.rowId, Number(change.sequence), 1);
    if (!previous) return undefined;
    return previous.row === null ? null : (JSON.parse(previous.row) as RowRecord);
  }

  private tick(): void {
    const now = Date.now();
    for (const table of this.tables.values()) {
      for (const s of table.all) {
        if (!s.waiting && now - s.lastWrite >= this.options.heartbeatMs) s.write(': heartbeat\n\n');
      }
    }
    if (now - this.lastLook >= (this.database.changeSignals.live() ? LOOK_MS.live : LOOK_MS.deaf)) {
      this.lastLook = now;
      this.look().catch((err) => this.options.warn(`change streams, looking at their tables: ${(err as Error).message}`));
    }
    this.checkKeys(now).catch((err) => this.options.warn(`change streams, checking keys: ${(err as Error).message}`));
  }

  /** Every table's reader looks in the log; the streams of a table deleted end once they have sent its last changes. */
  private async look(): Promise<void> {
    const ids = [...this.tables.keys()];
    if (ids.length === 0) return;
    const rows = await this.database.db.selectFrom('rh_tables').select('id').where('id', 'in', ids).execute();
    const existing = new Set(rows.map((r) => r.id as string));
    for (const id of ids) {
      const table = this.tables.get(id);
      if (table && !existing.has(id)) table.gone = true;
    }
    this.wakeAll();
  }

  private checking = false;

  /** Ends the streams of keys revoked, expired or deleted, or no longer allowed to read their tables; their rows are read again when the metadata may have changed. */
  private async checkKeys(now: number): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      const wanted = new Set<string>();
      for (const table of this.tables.values()) for (const s of table.all) wanted.add(s.plan.keyId);
      const version = this.database.metadataVersion();
      const stale = version === undefined || version !== this.keysVersion;
      const load = stale ? [...wanted] : [...wanted].filter((id) => !this.keys.has(id));
      if (load.length > 0) {
        const loaded = await this.loadKeys(load);
        if (stale) this.keys.clear();
        for (const [id, state] of loaded) this.keys.set(id, state);
        this.keysVersion = version;
      }
      for (const table of [...this.tables.values()]) {
        for (const s of [...table.all]) {
          const key = this.keys.get(s.plan.keyId);
          if (key !== undefined && !(usable(key, now) && s.plan.reads.every((id) => mayRead(key, id)))) this.end(s);
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
    const rows = await this.database.db.selectFrom('rh_api_keys').select(['id', 'revokedAt', 'expiresAt', 'scopes', 'tables', 'rateLimit']).where('id', 'in', ids).execute();
    const found = new Map<string, KeyState>(rows.map((r) => [r.id as string, { revokedAt: epoch(r.revokedAt), expiresAt: epoch(r.expiresAt), grant: keyAccess(r).grant }]));
    return ids.map((id) => [id, found.get(id) ?? null]);
  }
}

/**
 * Writes a read's text the stream has not had yet: all of it, in one write, or, for a stream that
 * stands inside the read (one that joined from a position of its own), the part after its position.
 */
function send(s: Stream, text: Text): void {
  if (s.closed || s.position >= text.last) return;
  const data = s.position <= text.after ? text.data : textAfter(text, s.position);
  s.position = text.last;
  if (data !== null) s.write(data);
}

/** The text of a read's entries kept and numbered after `position` (a view of its buffer, not a copy). */
function textAfter(t: Text, position: number): Buffer | null {
  if (t.data === null) return null;
  const i = t.entries.findIndex((e) => e.sequence > position);
  const start = i < 0 ? t.data.length : t.starts[i];
  return start >= t.data.length ? null : t.data.subarray(start);
}

/** A read's entries as one text, with the text of those `kept` says (null: all): one buffer, written as it is to every stream. */
function textOf(after: number, entries: Entry[], kept: boolean[] | null): Text {
  const frames: string[] = [];
  const starts: number[] = [];
  let bytes = 0;
  for (let i = 0; i < entries.length; i++) {
    starts.push(bytes);
    if (kept === null || kept[i]) {
      frames.push(entries[i].frame);
      bytes += entries[i].bytes;
    }
  }
  const last = entries.length > 0 ? entries[entries.length - 1].sequence : after;
  return { after, last, entries, starts, data: bytes === 0 ? null : Buffer.from(frames.join('')) };
}

/** Keeps the reader's read (one that began at the tail) with its recent reads, dropping the oldest beyond RECENT_BYTES. */
function keep(table: TableStreams, read: Read): void {
  // They follow one another: a read that does not begin where the last ended starts them anew.
  const last = table.recent.at(-1);
  if (last && last.entries[last.entries.length - 1].sequence !== read.after) {
    table.recent = [];
    table.recentBytes = 0;
  }
  table.recent.push(read);
  table.recentBytes += read.bytes;
  while (table.recent.length > 1 && table.recentBytes > RECENT_BYTES) table.recentBytes -= (table.recent.shift() as Read).bytes;
}

/** The recent read holding the entries just after `position` (it began at or before it), if the reader keeps it. */
function recentAfter(table: TableStreams, position: number): Read | undefined {
  const { recent } = table;
  if (recent.length === 0 || position < recent[0].after) return undefined;
  return recent.find((r) => r.entries[r.entries.length - 1].sequence > position);
}

/** A round's trace begins: the commits since the last read are its. */
function startTrace(table: TableStreams): RoundTrace {
  const commits = table.commits;
  table.commits = [];
  const at = traceNow();
  return { table: table.id, after: table.tail, last: table.tail, commits, readStart: at, readEnd: at, textEnd: NaN, ports: [], writes: [], passEnd: at, passCpuMs: 0 };
}

/** A live stream's write in a traced round. */
function traceWrite(trace: RoundTrace, s: Stream): void {
  const at = traceNow();
  trace.ports.push(s.out.port ?? 0);
  trace.writes.push(at);
  trace.passEnd = at;
}

/** Whether an update's entry wrote a field the filter reads (or may have: an entry that does not say). */
function changedFor(filter: RowFilter, entry: Entry): boolean {
  entry.written ??= entry.change.changedFields === null ? null : (JSON.parse(entry.change.changedFields) as string[]);
  return entry.written === null || mayChangeFor(filter, entry.written);
}

/** The row after the change (null: deleted), parsed once. */
function afterOf(entry: Entry): RowRecord | null {
  entry.after ??= entry.change.row === null ? null : (JSON.parse(entry.change.row) as RowRecord);
  return entry.after;
}

/** A read's text for the streams without a filter (made once). */
function plainText(read: Read): Text {
  read.plain ??= textOf(read.after, read.entries, null);
  return read.plain;
}

/** Whether a key's grant lets it read the rows of a table (its streams need rows:read there, as they did to open). */
const mayRead = (key: KeyState | null, tableId: string) => key !== null && hasScope(key.grant, 'rows:read') && coversTable(key.grant, tableId);

/** As the key check (auth-store.ts `inForce`); null: no such key. */
const usable = (key: KeyState | null, now: number) => key !== null && inForce(key, now);
