import { type ErrorDetail, ServiceError } from './errors.ts';
import { isObject } from './json.ts';

/**
 * What an API key may do (CONTRACT §12): its scopes, and the tables its row scopes (and
 * schema:read, and flows through their trigger table) apply to. `*` in either list: all.
 */

export const SCOPES = [
  '*',
  'rows:read',
  'rows:create',
  'rows:update',
  'rows:delete',
  'rows:export',
  'rows:import',
  'schema:read',
  'schema:write',
  'flows:read',
  'flows:write',
  'resources:read',
  'resources:write',
  'keys:manage',
] as const;
export type Scope = (typeof SCOPES)[number];

export const ALL = '*';

export interface Grant {
  /** Scopes, or ['*']. */
  readonly scopes: readonly string[];
  /** Table ids, or ['*']. */
  readonly tables: readonly string[];
}

export const FULL_GRANT: Grant = Object.freeze({ scopes: Object.freeze([ALL]), tables: Object.freeze([ALL]) });

/** A key's requests per window (null: none). */
export interface RateLimit {
  requests: number;
  perSeconds: number;
}

export const hasScope = (grant: Grant, scope: string): boolean => grant.scopes.includes(ALL) || grant.scopes.includes(scope);
export const coversTable = (grant: Grant, tableId: string): boolean => grant.tables.includes(ALL) || grant.tables.includes(tableId);
export const allTables = (grant: Grant): boolean => grant.tables.includes(ALL);
export const isFullGrant = (grant: Grant): boolean => grant.scopes.includes(ALL) && grant.tables.includes(ALL);

/**
 * What one request needs: one of `scopes` (usually one), on `table` when it names one. A table is
 * named by the reference the request used (id or code, for the message) and, once looked up, its
 * id; an unknown table has none, and only a key covering every table passes it (to its 404).
 */
export interface Need {
  scopes: readonly Scope[];
  table?: { ref: string; id: string | undefined; name: string };
  /** schema:write: the key must cover every table. */
  everyTable?: boolean;
}

/** The first need the grant does not meet, as the 403 that names its scope and table; null when it meets them all. */
export function refusal(grant: Grant, needs: readonly Need[]): ServiceError | null {
  for (const need of needs) {
    const scoped = need.scopes.some((s) => hasScope(grant, s));
    const tableOk = need.everyTable ? allTables(grant) : !need.table || allTables(grant) || (need.table.id !== undefined && coversTable(grant, need.table.id));
    if (scoped && tableOk) continue;
    const scopes = need.scopes.join(' or ');
    const where = need.everyTable ? ' on every table' : need.table ? ` on table ${need.table.name}` : '';
    return forbidden(`this key lacks ${scopes}${where}`);
  }
  return null;
}

export const forbidden = (message: string) => new ServiceError('forbidden', message);

/** A write within the store that touches a table (a flow's trigger table): the 403 when the grant does not cover it. */
export function tableRefusal(grant: Grant, scope: Scope, tableId: string, name = tableId): ServiceError | null {
  return refusal(grant, [{ scopes: [scope], table: { ref: name, id: tableId, name } }]);
}

/** The limit a key is held to: its own `rateLimit`, else the default (ROWHOUSE_RATE_LIMIT), else none (null). */
export const effectiveRateLimit = (own: RateLimit | null, fallback: RateLimit | null): RateLimit | null => own ?? fallback;

/** What the no-escalation rule compares of two keys: the grant, and the limit each is held to (`effectiveRateLimit`; null: none). */
export interface KeyPowers extends Grant {
  readonly rateLimit: RateLimit | null;
  /** The limit is the default's, the key having none of its own (for the message). */
  readonly byDefault?: boolean;
}

/** A key's powers: its grant, and its own rate limit (null: none) as the default `fallback` makes it. */
export function keyPowers(grant: Grant, own: RateLimit | null, fallback: RateLimit | null): KeyPowers {
  const rateLimit = effectiveRateLimit(own, fallback);
  return { scopes: grant.scopes, tables: grant.tables, rateLimit, byDefault: rateLimit !== null && own === null };
}

const limitText = ({ rateLimit, byDefault }: KeyPowers) =>
  rateLimit ? `${rateLimit.requests} per ${rateLimit.perSeconds} s${byDefault ? ', the default' : ''}` : 'unlimited';

/**
 * Whether `wanted` is held to no looser a limit than `limit`: limited too, at a rate
 * (requests/perSeconds) not above it, with a burst (`requests`) not above it. No limit: anything is.
 */
export function rateLimitWithin(limit: RateLimit | null, wanted: RateLimit | null): boolean {
  if (!limit) return true;
  if (!wanted) return false;
  // Cross-multiplied: whole numbers below 2^53 (10^9 × 86,400), so exact.
  return wanted.requests * limit.perSeconds <= limit.requests * wanted.perSeconds && wanted.requests <= limit.requests;
}

/**
 * No escalation (CONTRACT §12): the scope, table or rate limit of `wanted` that `caller` lacks, as a
 * 403; null when `wanted` is within it all. A caller without a rate limit gives any; a limited one
 * only a limit within its own (`rateLimitWithin`).
 */
export function escalation(caller: KeyPowers, wanted: KeyPowers, tableName: (id: string) => string = (id) => id): ServiceError | null {
  for (const s of wanted.scopes) {
    if (!hasScope(caller, s)) return forbidden(`this key lacks ${s}: a key can give another key only scopes it has itself`);
  }
  if (!allTables(caller)) {
    for (const t of wanted.tables) {
      if (t === ALL) return forbidden('this key lacks access to every table: a key can give another key only tables it has itself');
      if (!coversTable(caller, t)) return forbidden(`this key lacks table ${tableName(t)}: a key can give another key only tables it has itself`);
    }
  }
  if (!rateLimitWithin(caller.rateLimit, wanted.rateLimit)) {
    return forbidden(
      `this key's rate limit (${limitText(caller)}) is lower than the key it asks for (${limitText(wanted)}): ` +
        'a key can give another key only a rate limit within its own, no faster and with no larger burst',
    );
  }
  return null;
}

// ---- checking what a client writes ----

/** Problems of a `scopes` value: a non-empty array of known scopes, none repeated. */
export function scopesProblems(value: unknown, path = 'scopes'): ErrorDetail[] {
  if (!Array.isArray(value) || value.length === 0) return [{ path, message: `must be a non-empty array of scopes (${SCOPES.join(', ')})` }];
  const problems: ErrorDetail[] = [];
  value.forEach((s, i) => {
    if (typeof s !== 'string' || !(SCOPES as readonly string[]).includes(s)) {
      problems.push({ path: `${path}[${i}]`, message: `unknown scope ${JSON.stringify(s)}; use ${SCOPES.join(', ')}` });
    } else if (value.indexOf(s) !== i) problems.push({ path: `${path}[${i}]`, message: `scope ${s} is repeated` });
  });
  return problems;
}

/** Problems of a `tables` value's shape: a non-empty array of table ids or codes, or ['*']. (Which tables exist is the store's to say.) */
export function tablesShapeProblems(value: unknown, path = 'tables'): ErrorDetail[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > 1000) return [{ path, message: 'must be a non-empty array of at most 1000 table ids or codes, or ["*"]' }];
  const problems: ErrorDetail[] = [];
  value.forEach((t, i) => {
    if (typeof t !== 'string' || t.length === 0 || t.length > 255) problems.push({ path: `${path}[${i}]`, message: 'must be a table id or code' });
  });
  if (value.includes(ALL) && value.length > 1) problems.push({ path, message: '"*" stands alone: it already means every table' });
  return problems;
}

const MAX_WINDOW = 86_400;
const MAX_REQUESTS = 1_000_000_000;

/** Problems of a `rateLimit` value: null, or {requests, perSeconds} of positive integers. */
export function rateLimitProblems(value: unknown, path = 'rateLimit'): ErrorDetail[] {
  if (value === null) return [];
  const shape = `must be null or {"requests": n, "perSeconds": s} with positive whole numbers (perSeconds at most ${MAX_WINDOW})`;
  if (!isObject(value)) return [{ path, message: shape }];
  const problems: ErrorDetail[] = [];
  for (const key of Object.keys(value)) if (key !== 'requests' && key !== 'perSeconds') problems.push({ path: `${path}.${key}`, message: 'unknown key; use requests, perSeconds' });
  const whole = (v: unknown, max: number) => typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= max;
  if (!whole(value.requests, MAX_REQUESTS)) problems.push({ path: `${path}.requests`, message: `must be a whole number from 1 to ${MAX_REQUESTS}` });
  if (!whole(value.perSeconds, MAX_WINDOW)) problems.push({ path: `${path}.perSeconds`, message: `must be a whole number of seconds from 1 to ${MAX_WINDOW}` });
  return problems;
}

/** `ROWHOUSE_RATE_LIMIT`'s form, `requests/seconds` (600/60): the limit, or null when the text is not one. */
export function parseRateLimitText(text: string): RateLimit | null {
  const m = /^(\d{1,10})\/(\d{1,6})$/.exec(text);
  if (!m) return null;
  const limit = { requests: Number(m[1]), perSeconds: Number(m[2]) };
  return rateLimitProblems(limit).length === 0 ? limit : null;
}
