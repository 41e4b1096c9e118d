/**
 * A key's record (CONTRACT §12) and what it may do, in words as the service's 403 says it (pure: no
 * DOM, so the suite's Node tests can import it). The service still decides: a 403 it answers is
 * shown as it says it (ErrorBox).
 */

/** What every generic resource item has (docs/api.md, Generic resources). */
export interface Item {
  id: string;
  createdAt: string;
  updatedAt: string;
  createdBy: string;
  updatedBy: string;
}

export interface RateLimit {
  requests: number;
  perSeconds: number;
}

export interface ApiKey extends Item {
  name: string;
  memberId: string;
  prefix: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  revokedAt: string | null;
  scopes: string[];
  tables: string[];
  rateLimit: RateLimit | null;
  /** The key itself: in the create answer only. */
  key?: string;
}

export const can = (me: ApiKey | null, scope: string): boolean => me !== null && (me.scopes.includes('*') || me.scopes.includes(scope));

export const lacks = (scope: string) => `Your key lacks ${scope}.`;

/** Scopes that need every table besides the scope itself (CONTRACT §12: schema:write needs `tables: ["*"]`). */
const EVERY_TABLE: ReadonlySet<string> = new Set(['schema:write']);

/**
 * Why the key would be refused `scope`, in the words of the service's 403 (CONTRACT §12): a rows
 * scope on `table` (row scopes apply to the key's tables only), schema:write on every table; null
 * when it may.
 */
export function refusal(me: ApiKey, scope: string, table?: { id: string; code: string | null; name: string }): string | null {
  const everyTable = EVERY_TABLE.has(scope);
  const onTable = !everyTable && table !== undefined && scope.startsWith('rows:') ? table : null;
  const tableOk = everyTable ? me.tables.includes('*') : onTable === null || me.tables.includes('*') || me.tables.includes(onTable.id);
  if (can(me, scope) && tableOk) return null;
  return `Your key lacks ${scope}${everyTable ? ' on every table' : onTable ? ` on table ${onTable.code ?? onTable.name}` : ''}`;
}
