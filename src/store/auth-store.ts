import { randomUUID } from 'node:crypto';
import { apiKeyPrefix, hashApiKey } from '../domain/api-key.ts';
import type { Selectable } from 'kysely';
import { cachedTemplate } from './query-template.ts';
import type { MetadataCache } from './metadata-cache.ts';
import type { Meta, MetaDb } from './meta-schema.ts';

export interface Principal {
  keyId: string;
  memberId: string;
}

/** How stale lastUsedAt may get: writing it on every request would make each read a write. */
const LAST_USED_RESOLUTION_MS = 60_000;

type ApiKey = Selectable<Meta['rh_api_keys']>;

/** What a request's key is checked against: memoised per key hash (MetadataCache). */
export type KeyRow = Pick<ApiKey, 'id' | 'memberId' | 'expiresAt' | 'revokedAt' | 'lastUsedAt'>;

/**
 * The principal of a valid key; null when it is unknown, revoked or expired. The row may come
 * from the memo, so revokedAt and expiresAt are compared with the clock on every request.
 */
export async function authenticate(db: MetaDb, key: string, memo?: MetadataCache<KeyRow>): Promise<Principal | null> {
  const lookup = cachedTemplate(db, 'api-key-by-hash', (arg) =>
    db.selectFrom('rh_api_keys').select(['id', 'memberId', 'expiresAt', 'revokedAt', 'lastUsedAt']).where('keyHash', '=', arg(0)),
  );
  const hash = hashApiKey(key);
  const load = async (): Promise<KeyRow | undefined> => (await lookup.run(db, [hash])).rows[0];
  const row = memo ? await memo.get(db, hash, load) : await load();
  if (!row) return null;
  const now = Date.now();
  // Both take effect at the time they name: a revocation set for later is a scheduled one.
  const reached = (at: string | null) => at !== null && Date.parse(at) <= now;
  if (reached(row.revokedAt) || reached(row.expiresAt)) return null;
  if (row.lastUsedAt === null || now - Date.parse(row.lastUsedAt) > LAST_USED_RESOLUTION_MS) {
    // This write signals no metadata change (migration 4), so the memo keeps the row: note it there,
    // before waiting, so the requests meanwhile do not write it too.
    row.lastUsedAt = new Date(now).toISOString();
    await db.updateTable('rh_api_keys').set({ lastUsedAt: row.lastUsedAt }).where('id', '=', row.id).execute();
  }
  return { keyId: row.id, memberId: row.memberId };
}

/** Stores a key (its hash and prefix only) for a member; a key already stored is left as it is. */
export async function insertApiKey(db: MetaDb, key: string, name: string, memberId: string): Promise<string> {
  const now = new Date().toISOString();
  const id = randomUUID();
  await db
    .insertInto('rh_api_keys')
    .values({
      id, name, memberId, prefix: apiKeyPrefix(key), keyHash: hashApiKey(key), expiresAt: null, lastUsedAt: null,
      revokedAt: null, createdAt: now, updatedAt: now, createdBy: memberId, updatedBy: memberId,
    })
    .onConflict((oc) => oc.column('keyHash').doNothing())
    .execute();
  return id;
}

/** What `api-keys list` shows of a key: never the key or its hash. */
export type ApiKeyListing = Pick<ApiKey, 'id' | 'name' | 'prefix' | 'memberId' | 'createdAt' | 'expiresAt' | 'lastUsedAt' | 'revokedAt'>;

/** Every key, oldest first. */
export async function listApiKeys(db: MetaDb): Promise<ApiKeyListing[]> {
  return db
    .selectFrom('rh_api_keys')
    .select(['id', 'name', 'prefix', 'memberId', 'createdAt', 'expiresAt', 'lastUsedAt', 'revokedAt'])
    .orderBy('createdAt')
    .execute();
}

/** Revokes the key from now on; false when there is no such key or it was revoked already. */
export async function revokeApiKey(db: MetaDb, id: string): Promise<boolean> {
  const now = new Date().toISOString();
  const result = await db
    .updateTable('rh_api_keys')
    .set({ revokedAt: now, updatedAt: now })
    .where('id', '=', id)
    .where('revokedAt', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
