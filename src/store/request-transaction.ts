import { sql } from 'kysely';
import { type Database, type Db, retryable, runBeforeCommit } from './database.ts';
import type { AnswerWithWrite } from './change-entries.ts';
import { type HeldScope, type TransactionHooks, attachHooks, enterHeldScope, heldScope, leaveHeldScope, newHooks } from './transaction-hooks.ts';

/**
 * A request's held transaction: the writes of a request that must commit together with something
 * known only once it has answered (its Idempotency-Key's stored answer, CONTRACT §12). The first
 * transaction the request's handler begins (inTransaction) is held open when its work is done:
 * its result goes back to the handler, which renders the answer; `end` then adds what is to be
 * kept with it and commits, or rolls everything back. Later transactions of the same request run
 * in savepoints of the held one. While the handler runs (`run`), single-row writes take a
 * transaction too (inHeldScope), so every write of the request is in it.
 */

/** What the held transaction does at its start and end, besides the request's writes. */
export interface HeldWork<A> {
  /** First, in the transaction: may refuse (throw) before anything is written. */
  begin(tx: Db): Promise<void>;
  /** Last, in the transaction, with the answer: what is kept with the writes. */
  finish(tx: Db, answer: A): Promise<void>;
}

/** Once the handler has its result, how long the transaction may stay open for the answer before it is rolled back. */
const ANSWER_WAIT_MS = 30_000;

class RolledBack extends Error {}

let savepoints = 0;

export class HeldTransaction<A> implements HeldScope {
  private held: { tx: Db; hooks: TransactionHooks } | undefined;
  /** Settles the answer the held transaction waits for (null: roll back). */
  private settle: ((answer: A | null) => void) | undefined;
  /** The held transaction's end: resolves once committed, rejects when it failed to. */
  private ended: Promise<void> | undefined;
  private over = false;

  constructor(
    private readonly database: Database,
    private readonly work: HeldWork<A>,
  ) {}

  get open(): boolean {
    return !this.over;
  }

  /** Whether the request's writes are held, to commit with its answer (else it wrote nothing in a transaction). */
  get holdsWrites(): boolean {
    return this.ended !== undefined;
  }

  /** Runs the request's handler with its writes going into this transaction (heldScope enabled until it has ended: `end`). */
  scope<T>(handler: () => T): T {
    if (!this.entered) {
      this.entered = true;
      enterHeldScope();
    }
    return heldScope.run(this, handler);
  }

  /** Whether the request's handler has run in its scope (counted by enterHeldScope until `end` leaves it). */
  private entered = false;

  /**
   * Begins the held transaction before the handler runs, with `first` (in place of `begin`) as its
   * first work: answers what it answers (throws: nothing is held). The handler's first work then
   * runs in it directly, without a savepoint (when that work throws, the transaction is rolled back
   * and the request goes on as if none had been begun).
   */
  openWith<T>(first: (tx: Db) => Promise<T>): Promise<T> {
    return this.hold(first, true).then((result) => {
      this.pristine = true;
      return result;
    });
  }

  /** Whether the held transaction was begun by openWith and none of the handler's work has run in it yet. */
  private pristine = false;

  /** inTransaction within the request: the first opens the held transaction, later ones are savepoints of it. */
  run<T>(work: (tx: Db) => Promise<T>): Promise<T> {
    if (this.held && this.pristine) return this.first(this.held, work);
    if (this.held) return this.savepoint(this.held, work);
    return this.open ? this.hold(work) : Promise.reject(new Error('the request has answered: its transaction is over'));
  }

  /** The handler's first work in a transaction begun by openWith: run in it directly. */
  private async first<T>(held: { tx: Db }, work: (tx: Db) => Promise<T>): Promise<T> {
    this.pristine = false;
    try {
      return await work(held.tx);
    } catch (err) {
      // Nothing of the request is kept: rolled back, as a transaction of its own would be.
      const ended = this.ended;
      this.settle?.(null);
      this.settle = undefined;
      await ended?.catch(() => {});
      this.ended = undefined;
      this.over = false;
      // A transaction the database gave up on because of other writers: run again in one of its own.
      if (await retryable(this.database, err, 1)) return this.hold(work, false, 2);
      throw err;
    }
  }

  private async hold<T>(work: (tx: Db) => Promise<T>, opening = false, firstAttempt = 1): Promise<T> {
    for (let attempt = firstAttempt; ; attempt++) {
      let handedBack = false;
      try {
        return await new Promise<T>((resolve, reject) => {
          const hooks = newHooks();
          let committed: (() => void) | undefined;
          let failed: ((err: unknown) => void) | undefined;
          const transaction = this.database.db.transaction().execute(async (tx) => {
            attachHooks(tx, hooks);
            if (!opening) await this.work.begin(tx);
            const result = await work(tx);
            const answered = new Promise<A | null>((settle) => {
              this.settle = settle;
            });
            this.ended = new Promise<void>((ok, ko) => {
              committed = ok;
              failed = ko;
            });
            // Nobody may wait for it (a request whose client has gone): not an unhandled rejection.
            this.ended.catch(() => {});
            this.held = { tx, hooks };
            handedBack = true;
            resolve(result);
            let timer: NodeJS.Timeout | undefined;
            const late = new Promise<null>((settle) => {
              timer = setTimeout(() => settle(null), ANSWER_WAIT_MS);
            });
            const answer = await Promise.race([answered, late]);
            clearTimeout(timer);
            this.over = true;
            if (answer === null) throw new RolledBack();
            await runBeforeCommit(hooks);
            await this.work.finish(tx, answer);
          });
          transaction.then(
            () => {
              committed?.();
              // Outside the request's scope: what runs after the commit (a worker woken) is no part of it.
              heldScope.run(undefined, () => {
                for (const then of hooks.afterCommit) then();
              });
            },
            (err: unknown) => {
              this.held = undefined;
              this.over ||= handedBack;
              if (handedBack) failed?.(err);
              else reject(err);
            },
          );
        });
      } catch (err) {
        if (handedBack || !(await retryable(this.database, err, attempt))) throw err;
      }
    }
  }

  /** A later transaction of the request: a savepoint of the held one, rolled back alone when its work throws. */
  private async savepoint<T>(held: { tx: Db; hooks: TransactionHooks }, work: (tx: Db) => Promise<T>): Promise<T> {
    const { tx, hooks } = held;
    for (let attempt = 1; ; attempt++) {
      const name = sql.raw(`request_${++savepoints}`);
      const marks = { before: hooks.beforeCommit.length, after: hooks.afterCommit.length, participants: hooks.participants.length };
      const restores = hooks.participants.map((p) => p.snapshot());
      await sql`savepoint ${name}`.execute(tx);
      try {
        const result = await work(tx);
        await sql`release savepoint ${name}`.execute(tx);
        return result;
      } catch (err) {
        await sql`rollback to savepoint ${name}`.execute(tx);
        await sql`release savepoint ${name}`.execute(tx);
        for (const restore of restores) restore();
        for (const made of hooks.participants.splice(marks.participants)) made.discard();
        hooks.beforeCommit.length = marks.before;
        hooks.afterCommit.length = marks.after;
        if (!(await retryable(this.database, err, attempt))) throw err;
      }
    }
  }

  /**
   * The request has answered: `answer` is kept with its writes, which commit (null: rolled back,
   * nothing kept). Resolves once committed; rejects when the commit failed (nothing of it is kept).
   */
  async end(answer: A | null): Promise<void> {
    try {
      await this.ending(answer);
    } finally {
      if (this.entered) {
        this.entered = false;
        leaveHeldScope();
      }
    }
  }

  private async ending(answer: A | null): Promise<void> {
    if (this.ended) {
      this.settle?.(answer);
      this.settle = undefined;
      await this.ended.catch((err: unknown) => {
        if (!(err instanceof RolledBack)) throw err;
      });
      return;
    }
    if (this.over) return;
    this.over = true;
    if (answer === null) return;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.database.db.transaction().execute(async (tx) => {
          await this.work.begin(tx);
          await this.work.finish(tx, answer);
        });
        return;
      } catch (err) {
        if (!(await retryable(this.database, err, attempt))) throw err;
      }
    }
  }
}

/**
 * The answer of a request that is known before its one write (a single-row create: its row's
 * record), so that write keeps it in the same atomic step, outside any transaction
 * (AnswerWithWrite: on PostgreSQL in its one statement, on SQLite in its step of the group
 * commit), with no lookup of the key first: a record of the key fails the create, and nothing is
 * written. It goes to the write in the request's WriteContext (`keptAnswer`), not in heldScope:
 * no promise hook runs for such a request. Any other write of the request is refused
 * (NotKeptByWrite), before it writes. Either way the request then runs again as any other, in a
 * HeldTransaction (http/idempotency.ts).
 */
export class AnswerKeptByWrite {
  readonly answer: AnswerWithWrite;
  /** The body kept with the create, once both have committed. */
  kept: string | undefined;

  constructor(insert: Omit<AnswerWithWrite, 'written'>) {
    // Each property named (a spread of `insert` costs several times as much, on every keyed create).
    this.answer = {
      sql: insert.sql,
      parameters: insert.parameters,
      forget: insert.forget,
      forgetParameters: insert.forgetParameters,
      written: (body) => {
        this.kept = body;
      },
    };
  }
}
