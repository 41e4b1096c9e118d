import { ALL, FULL_GRANT, type Grant, type RateLimit, escalation, forbidden, hasScope, keyPowers, rateLimitProblems, scopesProblems, tablesShapeProblems } from '../../domain/access.ts';
import { apiKeyPrefix, generateApiKey, hashApiKey } from '../../domain/api-key.ts';
import { isUuid } from '../../domain/codes.ts';
import { type ErrorDetail, badRequest, invalid } from '../../domain/errors.ts';
import type { MetaDb } from '../meta-schema.ts';
import { tableNamer } from './table-names.ts';
import { AUDIT_RELATIONS, type Attrs, type Item, type ResourceSpec, type WriteContext } from './resource-spec.ts';

const timestamp = { type: 'string', maxLength: 64 };

/** A key's `tables` as given (ids or codes, or "*") as stored: ids, or ["*"]; an unknown table is a 400 naming it. */
export async function tableIds(db: MetaDb, refs: readonly string[], path = 'tables'): Promise<string[]> {
  if (refs.includes(ALL)) return [ALL];
  const ids: string[] = [];
  const problems: ErrorDetail[] = [];
  for (const [i, ref] of refs.entries()) {
    const row = ref.includes('\u0000')
      ? undefined
      : await db.selectFrom('rh_tables').select('id').where(isUuid(ref) ? 'id' : 'code', '=', isUuid(ref) ? ref.toLowerCase() : ref).executeTakeFirst();
    if (!row) problems.push({ path: `${path}[${i}]`, message: `no table ${ref}` });
    else if (!ids.includes(row.id)) ids.push(row.id);
  }
  if (problems.length > 0) throw invalid(problems, 'Invalid API key');
  return ids;
}

/** A key as the no-escalation rule sees it: its grant, and its own rate limit (null: none of its own). */
interface WantedKey extends Grant {
  rateLimit: RateLimit | null;
}

/**
 * No escalation (CONTRACT §12): the key a request creates, changes or deletes has no scope or table
 * its own key lacks, and is held to a rate limit within its own (each key's own, else the default).
 */
async function requireWithin(db: MetaDb, ctx: WriteContext, wanted: WantedKey, defaultRateLimit: RateLimit | null): Promise<void> {
  if (!ctx.grant) return;
  const caller = keyPowers(ctx.grant, ctx.rateLimit ?? null, defaultRateLimit);
  const refused = escalation(caller, keyPowers(wanted, wanted.rateLimit, defaultRateLimit), await tableNamer(db, wanted.tables));
  if (refused) throw refused;
}

/** A JSON column as the driver gives it: text on SQLite, parsed on PostgreSQL (SQL null: null). */
const stored = <T = string[]>(v: unknown): T => (typeof v === 'string' ? JSON.parse(v) : v) as T;
const storedKey = (item: Attrs): WantedKey => ({ scopes: stored(item.scopes), tables: stored(item.tables), rateLimit: stored<RateLimit | null>(item.rateLimit) ?? null });

/** The api-keys resource; `defaultRateLimit` (ROWHOUSE_RATE_LIMIT) is the limit of keys without one, for no escalation. */
export const apiKeysSpec = ({ defaultRateLimit }: { defaultRateLimit: RateLimit | null }): ResourceSpec => ({
  name: 'api-keys',
  table: 'rh_api_keys',
  label: 'API key',
  attrs: {
    name: { type: 'text', schema: { type: 'string', minLength: 1, maxLength: 255 }, create: 'required' },
    // Defaults to the member whose key makes the request; another member needs resources:write.
    memberId: { type: 'text', schema: { type: 'string' }, update: false },
    prefix: { type: 'text', schema: { type: 'string' }, create: 'no' },
    keyHash: { type: 'text', schema: { type: 'string' }, create: 'no', hidden: true },
    expiresAt: { type: 'timestamp', schema: timestamp, nullable: true, default: () => null },
    lastUsedAt: { type: 'timestamp', schema: timestamp, nullable: true, create: 'no', update: false },
    // Setting it revokes the key from the next request on.
    revokedAt: { type: 'timestamp', schema: timestamp, nullable: true, create: 'no', update: true },
    // What the key may do (CONTRACT §12): checked by `check`, tables stored as ids by the hooks.
    scopes: { type: 'json', schema: { type: 'array', items: { type: 'string' } }, default: () => [ALL] },
    tables: { type: 'json', schema: { type: 'array', items: { type: 'string' } }, default: () => [ALL] },
    rateLimit: {
      type: 'json',
      schema: { type: 'object', properties: { requests: { type: 'integer', minimum: 1 }, perSeconds: { type: 'integer', minimum: 1 } }, required: ['requests', 'perSeconds'] },
      nullable: true,
      default: () => null,
    },
  },
  relations: { ...AUDIT_RELATIONS, member: 'memberId' },
  // A manager limited to some tables sees only the keys within them: those it could make (CONTRACT §12).
  tableRef: { column: 'tables', list: true },
  createAnswers: { key: { type: 'string', description: 'The key itself, for the X-API-Key header: answered on create only, never stored (a replay of the create with its Idempotency-Key answers without it).' } },
  unkeptAnswers: ['key'],
  hooks: {
    check(input: Attrs): ErrorDetail[] {
      return [
        ...(input.scopes === undefined ? [] : scopesProblems(input.scopes)),
        ...(input.tables === undefined ? [] : tablesShapeProblems(input.tables)),
        ...(input.rateLimit === undefined ? [] : rateLimitProblems(input.rateLimit)),
      ];
    },
    async beforeInsert(tx, columns, input, ctx) {
      const memberId = typeof columns.memberId === 'string' ? columns.memberId : ctx.memberId;
      // A key for another member writes as that member (createdBy/updatedBy): only a key that
      // manages members may make one. Before the lookup, so the 403 says nothing of who exists.
      if (ctx.grant && memberId !== ctx.memberId && !hasScope(ctx.grant, 'resources:write')) {
        throw forbidden('this key lacks resources:write: a key can make keys for another member (memberId) only with resources:write');
      }
      columns.memberId = memberId;
      const member = await tx.selectFrom('rh_members').select('id').where('id', '=', memberId).executeTakeFirst();
      if (!member) throw badRequest(`memberId: no member ${memberId}`);
      // Left out, scopes and tables are ["*"]: a limited key must name what it gives.
      const wanted: WantedKey = {
        scopes: (input.scopes as string[] | undefined) ?? FULL_GRANT.scopes,
        tables: await tableIds(tx, (input.tables as string[] | undefined) ?? FULL_GRANT.tables),
        rateLimit: (input.rateLimit as RateLimit | null | undefined) ?? null,
      };
      await requireWithin(tx, ctx, wanted, defaultRateLimit);
      columns.tables = JSON.stringify(wanted.tables);
      const key = generateApiKey();
      columns.keyHash = hashApiKey(key);
      columns.prefix = apiKeyPrefix(key);
      // The key itself is answered once, on create, and never stored.
      return { key };
    },
    async beforeUpdate(tx, before: Item, changes, input, ctx) {
      // Changing a key (one's own included) needs all it has, before and after the change: its
      // rate limit may be tightened, not loosened.
      const was = storedKey(before);
      await requireWithin(tx, ctx, was, defaultRateLimit);
      if (input.tables !== undefined) changes.tables = JSON.stringify(await tableIds(tx, input.tables as string[]));
      await requireWithin(
        tx,
        ctx,
        {
          scopes: (input.scopes as string[] | undefined) ?? was.scopes,
          tables: changes.tables === undefined ? was.tables : stored(changes.tables),
          rateLimit: input.rateLimit === undefined ? was.rateLimit : (input.rateLimit as RateLimit | null),
        },
        defaultRateLimit,
      );
    },
    async beforeDelete(tx, item, ctx) {
      await requireWithin(tx, ctx, storedKey(item), defaultRateLimit);
    },
  },
});
