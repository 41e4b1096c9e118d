import { randomUUID } from 'node:crypto';
import { FULL_GRANT, type Grant, type RateLimit } from '../domain/access.ts';
import { apiKeyPrefix, hashApiKey } from '../domain/api-key.ts';
import type { Selectable } from 'kysely';
import { cachedTemplate } from './query-template.ts';
import type { MetadataCache } from './metadata-cache.ts';
import type { Meta, MetaDb } from './meta-schema.ts';

export interface Principal {
  keyId: string;
  memberId: string;
  /** What the key may do (CONTRACT §12). */
  grant: Grant;
  /** The key's own rate limit; null: the default (ROWHOUSE_RATE_LIMIT). */
  rateLimit: RateLimit | null;
}

/** How stale lastUsedAt may get: writing it on every request would make each read a write. */
const LAST_USED_RESOLUTION_MS = 60_000;

type ApiKey = Selectable<Meta['rh_api_keys']>;

/** What a request needs of a key's row, its times as epoch milliseconds (null: never). */
export interface KeyState {
  id: string;
  memberId: string;
  revokedAt: number | null;
  expiresAt: number | null;
  lastUsedAt: number | null;
  grant: Grant;
  rateLimit: RateLimit | null;
}

/** A JSON column as the driver gives it: text on SQLite, parsed on PostgreSQL. */
const json = (v: unknown): unknown => (typeof v === 'string' ? JSON.parse(v) : v);

/** The grant and rate limit a key's row holds. */
export function keyAccess(row: { scopes: unknown; tables: unknown; rateLimit: unknown }): { grant: Grant; rateLimit: RateLimit | null } {
  return { grant: { scopes: json(row.scopes) as string[], tables: json(row.tables) as string[] }, rateLimit: (json(row.rateLimit) as RateLimit | null) ?? null };
}

/** The grant of the key with this id (null: no such key): what a signed URL issued for it may do. */
export async function keyGrant(db: MetaDb, keyId: string): Promise<Grant | null> {
  const row = await db.selectFrom('rh_api_keys').select(['scopes', 'tables', 'rateLimit']).where('id', '=', keyId).executeTakeFirst();
  return row ? keyAccess(row).grant : null;
}

/** A stored timestamp as milliseconds (null stays null). */
export const epoch = (at: string | null) => (at === null ? null : Date.parse(at));

/** Whether a key is in force at `now`: a revocation or expiry takes effect at the time it names (one set for later is a scheduled one). */
export const inForce = (key: { revokedAt: number | null; expiresAt: number | null }, now: number): boolean =>
  !(key.revokedAt !== null && key.revokedAt <= now) && !(key.expiresAt !== null && key.expiresAt <= now);

async function loadKey(db: MetaDb, key: string): Promise<KeyState | undefined> {
  const lookup = cachedTemplate(db, 'api-key-by-hash', (arg) =>
    db.selectFrom('rh_api_keys').select(['id', 'memberId', 'expiresAt', 'revokedAt', 'lastUsedAt', 'scopes', 'tables', 'rateLimit']).where('keyHash', '=', arg(0)),
  );
  const [row] = (await lookup.run(db, [hashApiKey(key)])).rows;
  if (!row) return undefined;
  return { id: row.id, memberId: row.memberId, revokedAt: epoch(row.revokedAt), expiresAt: epoch(row.expiresAt), lastUsedAt: epoch(row.lastUsedAt), ...keyAccess(row) };
}

/**
 * The principal of a valid key; null when it is unknown, revoked or expired. Answered at once
 * (no promise) when the memo holds the key and its use need not be written down, as on most
 * requests. The memo is keyed by the key itself, so a hit costs no hash; the database only ever
 * sees the hash. Its rows are compared with the clock on every request.
 */
export function authenticate(db: MetaDb, key: string, memo?: MetadataCache<KeyState>): Principal | null | Promise<Principal | null> {
  const state = memo?.peek(db, key);
  if (state) return admit(db, state);
  const loading = memo ? memo.get(db, key, () => loadKey(db, key)) : loadKey(db, key);
  return loading.then((loaded) => (loaded ? admit(db, loaded) : null));
}

function admit(db: MetaDb, state: KeyState): Principal | null | Promise<Principal | null> {
  const now = Date.now();
  if (!inForce(state, now)) return null;
  const principal: Principal = { keyId: state.id, memberId: state.memberId, grant: state.grant, rateLimit: state.rateLimit };
  if (state.lastUsedAt !== null && now - state.lastUsedAt <= LAST_USED_RESOLUTION_MS) return principal;
  // This write signals no metadata change (migration 4), so the memo keeps the state: note it
  // there, before waiting, so the requests meanwhile do not write it too.
  state.lastUsedAt = now;
  return db
    .updateTable('rh_api_keys')
    .set({ lastUsedAt: new Date(now).toISOString() })
    .where('id', '=', state.id)
    .execute()
    .then(() => principal);
}

/** Stores a key (its hash and prefix only) for a member; a key already stored is left as it is. `grant`'s tables are ids. */
export async function insertApiKey(db: MetaDb, key: string, name: string, memberId: string, grant: Grant = FULL_GRANT): Promise<string> {
  const now = new Date().toISOString();
  const id = randomUUID();
  await db
    .insertInto('rh_api_keys')
    .values({
      id, name, memberId, prefix: apiKeyPrefix(key), keyHash: hashApiKey(key), expiresAt: null, lastUsedAt: null,
      revokedAt: null, createdAt: now, updatedAt: now, createdBy: memberId, updatedBy: memberId,
      scopes: JSON.stringify(grant.scopes), tables: JSON.stringify(grant.tables), rateLimit: null,
    })
    .onConflict((oc) => oc.column('keyHash').doNothing())
    .execute();
  return id;
}

/** What `api-keys list` shows of a key: never the key or its hash. */
export type ApiKeyListing = Pick<ApiKey, 'id' | 'name' | 'prefix' | 'memberId' | 'createdAt' | 'expiresAt' | 'lastUsedAt' | 'revokedAt'> & { grant: Grant };

/** Every key, oldest first. */
export async function listApiKeys(db: MetaDb): Promise<ApiKeyListing[]> {
  const rows = await db
    .selectFrom('rh_api_keys')
    .select(['id', 'name', 'prefix', 'memberId', 'createdAt', 'expiresAt', 'lastUsedAt', 'revokedAt', 'scopes', 'tables', 'rateLimit'])
    .orderBy('createdAt')
    .execute();
  return rows.map(({ scopes, tables, rateLimit, ...rest }) => ({ ...rest, grant: keyAccess({ scopes, tables, rateLimit }).grant }));
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
