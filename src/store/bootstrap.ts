import { randomBytes, randomUUID } from 'node:crypto';
import { generateApiKey } from '../domain/api-key.ts';
import { insertApiKey } from './auth-store.ts';
import type { MetaDb } from './meta-schema.ts';
import { ownerMemberId, settleSetting } from './settings.ts';

export interface Bootstrap {
  secret: string;
  ownerId: string;
  /** A key made on this start because the database had none: to be shown once. */
  createdKey: string | null;
}

/**
 * What the first start of an empty database creates, safe when several instances start at once:
 * the signing secret, the owner member, and a first API key (or the one ROWHOUSE_API_KEY names).
 */
export async function bootstrap(db: MetaDb, options: { secret: string | null; apiKey: string | null }): Promise<Bootstrap> {
  const secret = options.secret ?? (await settleSetting(db, 'secret', randomBytes(32).toString('base64url')));
  const ownerId = await ensureOwner(db);

  let createdKey: string | null = null;
  if (options.apiKey) {
    await insertApiKey(db, options.apiKey, 'ROWHOUSE_API_KEY', ownerId);
  } else {
    createdKey = await db.transaction().execute(async (tx) => {
      // Writing this row locks it until commit: instances starting together take turns, and only
      // the first finds no key and makes (and prints) one.
      const now = new Date().toISOString();
      await tx
        .insertInto('rh_settings')
        .values({ key: 'bootstrappedAt', value: now })
        .onConflict((oc) => oc.column('key').doUpdateSet({ value: now }))
        .execute();
      const any = await tx.selectFrom('rh_api_keys').select('id').limit(1).executeTakeFirst();
      if (any) return null;
      const key = generateApiKey();
      await insertApiKey(tx, key, 'Owner key (created at first start)', ownerId);
      return key;
    });
  }
  return { secret, ownerId, createdKey };
}

/** The owner member, created once however many instances start together. */
export async function ensureOwner(db: MetaDb): Promise<string> {
  const existing = await ownerMemberId(db);
  if (existing) return existing;
  const candidate = randomUUID();
  const now = new Date().toISOString();
  return db.transaction().execute(async (tx) => {
    const winner = await settleSetting(tx, 'ownerMemberId', candidate);
    if (winner === candidate) {
      await tx
        .insertInto('rh_members')
        .values({ id: candidate, name: 'Owner', email: null, createdAt: now, updatedAt: now, createdBy: candidate, updatedBy: candidate })
        .execute();
    }
    return winner;
  });
}
