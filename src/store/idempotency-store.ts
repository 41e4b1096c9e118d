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

/** The records of requests with an Idempotency-Key: found, claimed, kept with the writes they answer, swept once expired. */
export class IdempotencyStore {
  constructor(
    private readonly database: Database,
    /** How long an answer is kept (ROWHOUSE_IDEMPOTENCY_TTL_SECONDS). */
    private readonly ttlSeconds: number,
  ) {}

  /** The unexpired record of a key of an API key. */
  async find(keyId: string, key: string, now = new Date().toISOString()): Promise<IdempotencyRecord | undefined> {
    const db: MetaDb = this.database.db;
    return db
      .selectFrom('rh_idempotency')
      .selectAll()
      .where('keyId', '=', keyId)
      .where('key', '=', key)
      .where('expiresAt', '>', now)
      .executeTakeFirst();
  }

  /**
   * First in the transaction that writes for the request: holds the key against every other
   * instance until it ends, and finds no answer kept meanwhile (both else a 409: send it again).
   */
  async claim(tx: MetaDb, request: IdempotentRequest): Promise<void> {
    if (!(await this.database.dialect.tryLock(tx, `rowhouse-idempotency:${request.keyId}:${request.key}`))) throw inFlight(request.key);
    const kept = await tx
      .selectFrom('rh_idempotency')
      .select('key')
      .where('keyId', '=', request.keyId)
      .where('key', '=', request.key)
      .where('expiresAt', '>', new Date().toISOString())
      .executeTakeFirst();
    if (kept) throw inFlight(request.key);
  }

  /** Keeps the answer, in the transaction of the writes it answers (an expired record of the key gives way). */
  async keep(meta: MetaDb, request: IdempotentRequest, answer: KeptAnswer): Promise<void> {
    const now = new Date();
    await meta.deleteFrom('rh_idempotency').where('keyId', '=', request.keyId).where('key', '=', request.key).execute();
    await meta
      .insertInto('rh_idempotency')
      .values({ ...request, ...answer, createdAt: now.toISOString(), expiresAt: new Date(now.getTime() + this.ttlSeconds * 1000).toISOString() })
      .execute();
  }

  /** Deletes the expired records; answers how many. Safe on several instances at once. */
  async sweep(now = new Date().toISOString()): Promise<number> {
    const db: MetaDb = this.database.db;
    const r = await db.deleteFrom('rh_idempotency').where('expiresAt', '<=', now).executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
