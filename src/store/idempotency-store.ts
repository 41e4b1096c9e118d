import type { CompiledQuery } from 'kysely';
import { ServiceError } from '../domain/errors.ts';
import type { Database } from './database.ts';
import type { Meta, MetaDb } from './meta-schema.ts';

/** A request with an Idempotency-Key, as kept (CONTRACT §12): what it was, and its answer. */
export type IdempotencyRecord = Meta['rh_idempotency'];

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

/** The records of requests with an Idempotency-Key: found, claimed, kept with the writes they answer, swept once expired. */
export class IdempotencyStore {
  private readonly statements;

  constructor(
    private readonly database: Database,
    /** How long an answer is kept (ROWHOUSE_IDEMPOTENCY_TTL_SECONDS). */
    private readonly ttlSeconds: number,
  ) {
    const db: MetaDb = database.db;
    type Lookup = 'keyId' | 'key' | 'now';
    type Kept = 'keyId' | 'key' | 'method' | 'path' | 'bodyHash' | 'status' | 'contentType' | 'body' | 'createdAt' | 'expiresAt';
    this.statements = {
      find: compiledOnce<Lookup>((v) => db.selectFrom('rh_idempotency').selectAll().where('keyId', '=', v('keyId')).where('key', '=', v('key')).where('expiresAt', '>', v('now')).compile()),
      claim: compiledOnce<Lookup>((v) => db.selectFrom('rh_idempotency').select('key').where('keyId', '=', v('keyId')).where('key', '=', v('key')).where('expiresAt', '>', v('now')).compile()),
      // An expired record of the key gives way: one statement.
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
        return db
          .insertInto('rh_idempotency')
          .values({ keyId: v('keyId'), key: v('key'), ...answer })
          .onConflict((oc) => oc.columns(['keyId', 'key']).doUpdateSet(answer))
          .compile();
      }),
    };
  }

  /** The unexpired record of a key of an API key. */
  async find(keyId: string, key: string, now = new Date().toISOString()): Promise<IdempotencyRecord | undefined> {
    const [kept] = await this.run<IdempotencyRecord>(this.database.db, this.statements.find({ keyId, key, now }));
    return kept;
  }

  /**
   * First in the transaction that writes for the request: holds the key against every other
   * instance until it ends, and finds no answer kept meanwhile (both else a 409: send it again).
   */
  async claim(tx: MetaDb, request: IdempotentRequest): Promise<void> {
    if (!(await this.database.dialect.tryLock(tx, `rowhouse-idempotency:${request.keyId}:${request.key}`))) throw inFlight(request.key);
    const kept = await this.run(tx, this.statements.claim({ keyId: request.keyId, key: request.key, now: new Date().toISOString() }));
    if (kept.length > 0) throw inFlight(request.key);
  }

  /** Keeps the answer, in the transaction of the writes it answers (an expired record of the key gives way). */
  async keep(meta: MetaDb, request: IdempotentRequest, answer: KeptAnswer): Promise<void> {
    const now = new Date();
    await this.run(meta, this.statements.keep({ ...request, ...answer, createdAt: now.toISOString(), expiresAt: new Date(now.getTime() + this.ttlSeconds * 1000).toISOString() }));
  }

  /** Runs one of the statements, prepared (PostgreSQL: parsed and planned once per connection; every idempotent request runs the same few). */
  private async run<R>(db: MetaDb, query: CompiledQuery): Promise<R[]> {
    this.database.prepare(query.sql);
    return (await db.executeQuery<R>(query)).rows;
  }

  /** Deletes the expired records; answers how many. Safe on several instances at once. */
  async sweep(now = new Date().toISOString()): Promise<number> {
    const db: MetaDb = this.database.db;
    const r = await db.deleteFrom('rh_idempotency').where('expiresAt', '<=', now).executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
