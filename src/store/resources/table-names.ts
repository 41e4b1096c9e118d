import { ALL, type Grant, type Scope, tableRefusal } from '../../domain/access.ts';
import type { ServiceError } from '../../domain/errors.ts';
import type { MetaDb } from '../meta-schema.ts';

/** The table names of a 403 about tables (CONTRACT §12): codes where they have one, else the id. */
export async function tableNamer(db: MetaDb, ids: readonly string[]): Promise<(id: string) => string> {
  const real = ids.filter((id) => id !== ALL);
  const rows = real.length === 0 ? [] : await db.selectFrom('rh_tables').select(['id', 'code']).where('id', 'in', real).execute();
  const names = new Map(rows.map((r) => [r.id, r.code ?? r.id]));
  return (id) => names.get(id) ?? id;
}

/** The 403 of a key that may not use `scope` on the table `tableId` (domain/access.ts tableRefusal), naming it by its code; null when it may. */
export async function namedTableRefusal(db: MetaDb, grant: Grant, scope: Scope, tableId: string): Promise<ServiceError | null> {
  if (!tableRefusal(grant, scope, tableId)) return null;
  return tableRefusal(grant, scope, tableId, (await tableNamer(db, [tableId]))(tableId));
}
