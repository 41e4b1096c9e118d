import { type CompiledQuery, sql } from 'kysely';
import { ServiceError } from '../domain/errors.ts';
import type { AnswerWithWrite } from './change-entries.ts';
import type { Database } from './database.ts';
import { keyHashOf } from './idempotency-key-hash.ts';
import type { Meta, MetaDb } from './meta-schema.ts';

/** A request with an Idempotency-Key, as kept (CONTRACT §12): what it was, and its answer. */
export type IdempotencyRecord = Omit<Meta['rh_idempotency'], 'keyHash'>;

/** A record's columns as read: all but the hash it is found by. */
const RECORD_COLUMNS = ['keyId', 'key', 'method', 'path', 'bodyHash', 'status', 'contentType', 'body', 'createdAt', 'expiresAt'] as const satisfies readonly (keyof IdempotencyRecord)[];

/** What a request is, to tell a repeat from another request under the same key. */
export interface IdempotentRequest {
  keyId: string;
  key: string;
  method: string;
  path: string;
  bodyHash: string;
}

/** An answer to keep. */
export interface KeptAnswer {
  status: number;
  contentType: string | null;
  body: string | null;
}

export const inFlight = (key: string) =>
  new ServiceError('idempotency_in_flight', `A request with Idempotency-Key ${JSON.stringify(key)} is still running: send it again once it has answered`);

/**
 * A statement compiled by the query builder once, on first use, and bound to new values after:
 * its parameters are found by name in the first compile, whose values are sentinels. (Compiling
 * costs a short statement more than running it prepared.)
 */
function compiledOnce<K extends string>(compile: (value: (name: K) => string) => CompiledQuery): (values: Record<K, unknown>) => CompiledQuery {
  let made: { query: CompiledQuery; names: K[] } | undefined;
  return (values) => {
    if (!made) {
      const query = compile((name) => `\u0000${name}`);
      const names = query.parameters.map((p) => {
        if (typeof p !== 'string' || !p.startsWith('\u0000')) throw new Error(`compiledOnce: a parameter that is not a named value (${String(p)}) in ${query.sql}`);
        return p.slice(1) as K;
      });
      made = { query, names };
    }
    const { query, names } = made;
    return { ...query, parameters: names.map((n) => values[n]) };
  };
}

/** A kept record's columns but its body, in the order keptInsert binds them. */
const KEPT_WITH_WRITE = ['keyId', 'key', 'method', 'path', 'bodyHash', 'status', 'contentType', 'createdAt', 'expiresAt'] as const satisfies readonly (keyof IdempotencyRecord)[];

/**
 * A kept record's plain insert, the same text for both databases (their bound values placed by
 * `place`), its body the created row's record (bound at `record`). The table's name is written
 * unquoted: SQLite's main connection takes a statement naming a quoted metadata table for one that
 * may change the metadata (sqlite/open-sqlite.ts), which this one does not.
 */
function keptInsert(place: (i: number) => string, record: string): string {
  return `insert into rh_idempotency (${KEPT_WITH_WRITE.map((c) => `"${c}"`).join(', ')}, "keyHash", "body") values (${KEPT_WITH_WRITE.map((_, i) => place(i)).join(', ')}, ${place(KEPT_WITH_WRITE.length)}, ${record})`;
}

/** The delete of a kept record by its key (keyHash, keyId, key), written as keptInsert is. */
function keptDelete(place: (i: number) => string): string {
  return `delete from rh_idempotency where "keyHash" = ${place(0)} and "keyId" = ${place(1)} and "key" = ${place(2)}`;
}

/** The records of requests with an Idempotency-Key: found, claimed, kept with the writes they answer, swept once expired. */
export class IdempotencyStore {
  private readonly statements;

  constructor(
    private readonly database: Database,
    /** How long an answer is kept (ROWHOUSE_IDEMPOTENCY_TTL_SECONDS). */
    private readonly ttlSeconds: number,
  ) {
    const db: MetaDb = database.db;
    type Lookup = 'keyHash' | 'keyId' | 'key' | 'now';
    type Opening = Lookup | 'lock';
    type Kept = 'keyHash' | 'keyId' | 'key' | 'method' | 'path' | 'bodyHash' | 'status' | 'contentType' | 'body' | 'createdAt' | 'expiresAt';
    const lock = database.dialect.tryLock('');
    this.locks = lock !== null;
    this.statements = {
      find: compiledOnce<Lookup>((v) =>
        db.selectFrom('rh_idempotency').select(RECORD_COLUMNS).where('keyHash', '=', v('keyHash') as unknown as bigint).where('keyId', '=', v('keyId')).where('key', '=', v('key')).where('expiresAt', '>', v('now')).compile(),
      ),
      // One statement, one round trip: the key's lock taken, and its unexpired record read (none: every column null).
      open: compiledOnce<Opening>(
        (v) =>
          sql`select ${database.dialect.tryLock(v('lock')) ?? sql`1`} as "locked", ${sql.raw(RECORD_COLUMNS.map((c) => `r."${c}"`).join(', '))} from (select 1 as one) as o
            left join rh_idempotency as r on r."keyHash" = ${v('keyHash')} and r."keyId" = ${v('keyId')} and r."key" = ${v('key')} and r."expiresAt" > ${v('now')}`.compile(db),
      ),
      // An expired record of the key gives way, an unexpired one not (nothing returned): one statement.
      keep: compiledOnce<Kept>((v) => {
        const answer = {
          method: v('method'),
          path: v('path'),
          bodyHash: v('bodyHash'),
          status: v('status') as unknown as number,
          contentType: v('contentType'),
          body: v('body'),
          createdAt: v('createdAt'),
          expiresAt: v('expiresAt'),
        };
        // The key's expired record gives way, and so would an expired one of another key of the same hash.
        const named = { keyId: v('keyId'), key: v('key'), ...answer };
        return db
          .insertInto('rh_idempotency')
          .values({ keyHash: v('keyHash') as unknown as bigint, ...named })
          .onConflict((oc) => oc.column('keyHash').doUpdateSet(named).where('rh_idempotency.expiresAt', '<=', v('createdAt')))
          .returning('key')
          .compile();
      }),
    };
  }

  /**
   * Whether the database has several writers at once (PostgreSQL; several instances), so a key is
   * locked in the transaction that answers it: then `open` begins that transaction (lock and lookup
   * in one statement). SQLite runs one write transaction at a time: the key's record is found
   * outside (`find`), and the instance's own slot holds it.
   */
  readonly locks: boolean;

  /** The unexpired record of a key of an API key. */
  async find(keyId: string, key: string, now = new Date().toISOString()): Promise<IdempotencyRecord | undefined> {
    const [kept] = await this.run<IdempotencyRecord>(this.database.db, this.statements.find({ keyHash: keyHashOf(keyId, key), keyId, key, now }));
    return kept;
  }

  /**
   * First in the transaction that writes for the request, where the database has several writers
   * (`locks`): holds the key against every other instance until it ends (else a 409: send it
   * again), and answers its unexpired record, if any. One statement. (Its snapshot may be older
   * than the lock: a record committed in between is caught by `keep`, which then refuses.)
   */
  async open(tx: MetaDb, request: Pick<IdempotentRequest, 'keyId' | 'key'>): Promise<IdempotencyRecord | undefined> {
    const { keyId, key } = request;
    const [row] = await this.run<IdempotencyRecord & { locked: unknown }>(tx, this.statements.open({ lock: `rowhouse-idempotency:${keyId}:${key}`, keyHash: keyHashOf(keyId, key), keyId, key, now: new Date().toISOString() }));
    if (!row.locked) throw inFlight(key);
    if (row.key === null) return undefined;
    const { locked: _, ...kept } = row;
    return { ...kept, status: Number(kept.status) };
  }

  /**
   * First in the transaction that writes for a request whose record was looked for outside it
   * (`find`, none): where there are several writers, holds the key and finds no answer kept
   * meanwhile (both else a 409: send it again).
   */
  async claim(tx: MetaDb, request: IdempotentRequest): Promise<void> {
    if (this.locks && (await this.open(tx, request))) throw inFlight(request.key);
  }

  /**
   * Keeps the answer, in the transaction of the writes it answers (an expired record of the key
   * gives way). An unexpired one kept meanwhile by another instance is a 409, rolling the writes back.
   */
  async keep(meta: MetaDb, request: IdempotentRequest, answer: KeptAnswer): Promise<void> {
    const kept = await this.run(meta, this.statements.keep({ ...this.record(request, answer), keyHash: keyHashOf(request.keyId, request.key) }));
    if (kept.length === 0) throw inFlight(request.key);
  }

  /**
   * The answer to `request` as a single-row create keeps it in its own statement (AnswerWithWrite,
   * request-transaction.ts AnswerKeptByWrite): this status and content type, the row's record as
   * its body. A plain insert: a record of the key, even an expired one, fails it and the create.
   */
  keptWithWrite(request: IdempotentRequest, answer: Omit<KeptAnswer, 'body'>): Omit<AnswerWithWrite, 'written'> {
    const { keyId, key, method, path, bodyHash } = request;
    const { createdAt, expiresAt } = this.times();
    const keyHash = keyHashOf(keyId, key);
    // Named, not spread from a record (a spread costs several times as much on every keyed create); bound in KEPT_WITH_WRITE's order, then the hash (keptInsert).
    const values: Record<(typeof KEPT_WITH_WRITE)[number], unknown> = { keyId, key, method, path, bodyHash, status: answer.status, contentType: answer.contentType, createdAt, expiresAt };
    const parameters: unknown[] = KEPT_WITH_WRITE.map((column) => values[column]);
    parameters.push(keyHash);
    return { sql: keptInsert, parameters, forget: keptDelete, forgetParameters: [keyHash, keyId, key] };
  }

  /** The record of a request's answer, kept now until the time to live has passed. */
  private record(request: IdempotentRequest, answer: KeptAnswer): IdempotencyRecord {
    const { keyId, key, method, path, bodyHash } = request;
    const { createdAt, expiresAt } = this.times();
    return { keyId, key, method, path, bodyHash, ...answer, createdAt, expiresAt };
  }

  /** The times of a record kept now, written once a millisecond (the requests of one millisecond share them). */
  private times(): { createdAt: string; expiresAt: string } {
    const now = Date.now();
    if (now !== this.lastTimes.at) this.lastTimes = { at: now, createdAt: new Date(now).toISOString(), expiresAt: new Date(now + this.ttlSeconds * 1000).toISOString() };
    return this.lastTimes;
  }

  private lastTimes = { at: 0, createdAt: '', expiresAt: '' };

  /** Runs one of the statements, prepared (PostgreSQL: parsed and planned once per connection; every idempotent request runs the same few). */
  private async run<R>(db: MetaDb, query: CompiledQuery): Promise<R[]> {
    this.database.prepare(query.sql);
    return (await db.executeQuery<R>(query)).rows;
  }

  /** Deletes the expired records; answers how many. Safe on several instances at once. */
  async sweep(now = new Date().toISOString()): Promise<number> {
    if (this.database.sweepExpiredAnswers) return this.database.sweepExpiredAnswers(now);
    const db: MetaDb = this.database.db;
    const r = await db.deleteFrom('rh_idempotency').where('expiresAt', '<=', now).executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
