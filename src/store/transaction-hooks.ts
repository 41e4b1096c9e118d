import { AsyncLocalStorage } from 'node:async_hooks';
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
}

/**
 * Refused in a request whose answer its create is to keep (WriteContext.keptAnswer): any other
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
 * While it is enabled, Node 20 runs a promise hook for every promise of the process (about 0.2 µs
 * each, measured: a create makes hundreds), so it is enabled only while a request holds a scope
 * (enterHeldScope … leaveHeldScope) and disabled again once none does.
 */
export const heldScope = new AsyncLocalStorage<HeldScope | undefined>();

/** How many requests hold a scope of heldScope (entered, not yet left). */
let heldScopes = 0;

/** A request's held transaction is entered (its handler runs in heldScope). Leave it once, with leaveHeldScope, when it has ended. */
export function enterHeldScope(): void {
  heldScopes++;
}

/**
 * A request's held transaction has ended (committed or rolled back): when no other request holds
 * one, heldScope is disabled (its promise hooks off; getStore() answers undefined, as outside any
 * scope, until the next run). What still runs of a request that has ended finds no scope, as it
 * found its ended one (`open` false) before.
 */
export function leaveHeldScope(): void {
  if (--heldScopes === 0) heldScope.disable();
}

/** How many requests hold a scope of heldScope now (0: it is disabled). */
export function heldScopesNow(): number {
  return heldScopes;
}

/** Whether the running code's writes go into a request's held transaction: single-row writes then take a transaction too. */
export function inHeldScope(): boolean {
  return heldScope.getStore()?.open === true;
}

