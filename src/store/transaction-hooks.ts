import { AsyncLocalStorage } from 'node:async_hooks';
import type { AnswerWithWrite } from './change-entries.ts';
import type { Db } from './dialect.ts';

/**
 * What a transaction begun by inTransaction (database.ts) runs besides its work: before it commits,
 * after it has committed, and what undoes a savepoint's share of them (a request's held
 * transaction, request-transaction.ts, runs later writes of the request in savepoints).
 */
export interface TransactionHooks {
  beforeCommit: (() => Promise<void>)[];
  afterCommit: (() => void)[];
  /** State kept beside the transaction (the change log's pending entries) that a savepoint rolled back must forget too. */
  participants: SavepointParticipant[];
}

/** State kept in memory beside a transaction, which a rolled-back savepoint must put back as it was. */
export interface SavepointParticipant {
  /** Taken when a savepoint begins: what puts the state back as it is now. */
  snapshot(): () => void;
  /** Made within a savepoint that is rolled back: forget it all. */
  discard(): void;
}

export const newHooks = (): TransactionHooks => ({ beforeCommit: [], afterCommit: [], participants: [] });

const transactionHooks = new WeakMap<Db, TransactionHooks>();

export function attachHooks(tx: Db, hooks: TransactionHooks): void {
  transactionHooks.set(tx, hooks);
}

export function hooksOf(tx: Db): TransactionHooks | undefined {
  return transactionHooks.get(tx);
}

/** Registers state beside the transaction `tx` that savepoints rolled back must restore (no-op outside inTransaction's transactions). */
export function savepointParticipant(tx: Db, participant: SavepointParticipant): void {
  transactionHooks.get(tx)?.participants.push(participant);
}

/**
 * A transaction a request holds open across its writes (request-transaction.ts): inTransaction
 * runs work in it instead of a transaction of its own while the request's handler runs.
 */
export interface HeldScope {
  run<T>(work: (tx: Db) => Promise<T>): Promise<T>;
  /** Whether writes still join it (false once it has ended). */
  readonly open: boolean;
  /**
   * A request's answer that its one single-row create keeps in the same atomic step, outside any
   * transaction (request-transaction.ts AnswerKeptByWrite): then no other write may run in the
   * scope (`run` refuses it, NotKeptByWrite).
   */
  readonly answer?: AnswerWithWrite;
}

/**
 * Refused in a request's scope whose answer its create is to keep (AnswerKeptByWrite): any other
 * write, before anything is written. The request then runs again in a held transaction.
 */
export class NotKeptByWrite extends Error {
  constructor(what: string) {
    super(`${what}: not a create that keeps its answer, in a request whose answer its create keeps (it runs again in a transaction of its own)`);
  }
}

/**
 * The held transaction of the request whose handler is running, if it has one. (Left by running
 * with undefined, not by exit(): on Node 20 exit() turns the process's promise hooks off and on.)
 */
export const heldScope = new AsyncLocalStorage<HeldScope | undefined>();

/** Whether the running code's writes go into a request's held transaction: single-row writes then take a transaction too. */
export function inHeldScope(): boolean {
  return heldScope.getStore()?.open === true;
}

/**
 * Whether a single-row write that is one statement runs alone, without a transaction: outside a
 * request's held transaction, or in a request whose answer its create keeps (`keptAnswer`).
 */
export function writesAlone(): boolean {
  const held = heldScope.getStore();
  return held?.open !== true || held.answer !== undefined;
}

/** The request's answer its single-row create is to keep with it (HeldScope.answer), if the running code is such a request's. */
export function keptAnswer(): AnswerWithWrite | undefined {
  const held = heldScope.getStore();
  return held?.open === true ? held.answer : undefined;
}
