import type { MetaDb } from './meta-schema.ts';

/** Service-wide values kept in the database, the same for every instance. */
async function readSetting(db: MetaDb, key: string): Promise<string | undefined> {
  const row = await db.selectFrom('rh_settings').select('value').where('key', '=', key).executeTakeFirst();
  return row?.value;
}

/** Stores the value unless one is there already; answers the value that won. */
export async function settleSetting(db: MetaDb, key: string, value: string): Promise<string> {
  await db.insertInto('rh_settings').values({ key, value }).onConflict((oc) => oc.column('key').doNothing()).execute();
  return (await readSetting(db, key)) as string;
}

export const ownerMemberId = (db: MetaDb) => readSetting(db, 'ownerMemberId');
