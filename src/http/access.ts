import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { type Grant, type Need, type Scope, isFullGrant, refusal } from '../domain/access.ts';
import type { ServiceError } from '../domain/errors.ts';
import { isObject } from '../domain/json.ts';
import type { MetaDb } from '../store/meta-schema.ts';
import type { TableCatalog } from '../store/table-catalog.ts';
import { isLinkField } from '../domain/field-types/link.ts';
import { parseRowFilter } from '../domain/row-filter.ts';
import { parseExpand } from '../domain/requests/expand.ts';
import type { ErrorDetail } from '../domain/errors.ts';
import { expandTables } from '../plan/tables-touched.ts';
import { withLinkedTables } from '../store/links/linked-tables.ts';

/**
 * The authorization stage (CONTRACT §12): every route under /api declares what it needs (a scope,
 * and the tables it touches) as `config.access`, and this stage checks the calling key's grant
 * against it after the body is parsed and before the handler does any work. A route registered
 * without a declaration fails at registration: a new route cannot forget.
 *
 * Declaring is one line, in the route's options:
 *
 *   app.get('/api/tables/:table/rows-aggregate', needs.onTable('rows:read'), handler)
 *   app.post('/api/flows', needs.scope('flows:write'), handler)
 *   app.get('/api/api-keys/me', needs.anyKey(), handler)
 *   app.post('/api/rows-batch', needs.rule((request) => …needs from the body…), handler)
 */

/** A need as a route declares it: its table named by the reference the request uses (id or code). */
export interface DeclaredNeed {
  scopes: readonly Scope[];
  table?: string;
  everyTable?: boolean;
  /** Places the 403 where in the request the need comes from (a batch's operation). */
  placed?: (err: ServiceError) => unknown;
  /**
   * The request's query: the tables its `expand` and link filters reach from `table` (CONTRACT
   * §11) need rows:read too (§12). Its `scopes` are then those.
   */
  reach?: Record<string, unknown>;
  /**
   * With `reach`: the table itself counts too when a link leads back to it (a self-link's `expand`),
   * for a route whose own scopes do not read the table (a write's answer expanding another row).
   */
  reachSelf?: boolean;
}

/** What a route needs, from its request: its params, query and parsed body. */
export type AccessRule = (request: FastifyRequest) => readonly DeclaredNeed[];

declare module 'fastify' {
  interface FastifyContextConfig {
    /** What the route needs of the calling key: one of `needs`' declarations (http/access.ts). */
    access?: AccessRule;
  }
}

const declare = (access: AccessRule) => ({ config: { access } });
const NOTHING: readonly DeclaredNeed[] = Object.freeze([]);

/** The table a rows route's path names. */
export const pathTable = (request: FastifyRequest): string => {
  const params = request.params as { table?: string; tableId?: string };
  return params.table ?? params.tableId ?? '';
};

/**
 * The needs of a request to one table's rows: `scopes` on the table its path names. This is the
 * one place that says which tables a rows request touches: the tables reached through it (the
 * targets of `expand` and of link filters, needing rows:read) are added here.
 */
export function rowNeeds(request: FastifyRequest, ...scopes: Scope[]): DeclaredNeed[] {
  const table = pathTable(request);
  const out: DeclaredNeed[] = scopes.map((scope) => ({ scopes: [scope], table }));
  const query = request.query as Record<string, unknown> | undefined;
  if (query && (query.expand !== undefined || query.filter !== undefined)) out.push({ scopes: ['rows:read'], table, reach: query, reachSelf: !readsRows(scopes) });
  return out;
}

/** Whether scopes that let a request run let it read its table's rows (rows:export reads them all). */
const readsRows = (scopes: readonly Scope[]): boolean => scopes.includes('rows:read') || scopes.includes('rows:export');

/**
 * The ids of the tables a rows request's `expand` and link filters reach from the table `ref`
 * names, besides it unless `self` (plan/tables-touched.ts): parsed as the route will parse them.
 * A filter with problems reaches the tables its links were followed into as far as it was read
 * (parseRowFilter's `reached`): a key that may not read them is refused (403) before the route's
 * 400 would name their fields. A query that is not JSON reaches nothing here: the route's 400.
 */
async function reachedTables(catalog: TableCatalog, db: MetaDb, ref: string, query: Record<string, unknown>, self: boolean): Promise<string[]> {
  const table = ref === '' || ref.includes('\u0000') ? undefined : await catalog.find(db, ref);
  if (!table || !table.fields.some(isLinkField)) return [];
  const lookup = await withLinkedTables(catalog, db, table);
  const details: ErrorDetail[] = [];
  const reached = new Set<string>();
  if (typeof query.filter === 'string') {
    try {
      parseRowFilter(JSON.parse(query.filter), lookup, details, reached);
    } catch {
      // Not JSON: the route's 400.
    }
  }
  expandTables(parseExpand(query.expand, lookup, details), reached);
  if (!self) reached.delete(table.id);
  return [...reached];
}

/** Whether a row create body asks to update a row that exists (`options.upsert`): then it needs rows:update too. */
export const upserts = (body: unknown): boolean => isObject(body) && isObject(body.options) && body.options.upsert === true;

export const needs = {
  /** Any valid key (GET /api/api-keys/me). */
  anyKey: () => declare(() => NOTHING),
  /** One scope, whatever the tables. */
  scope: (scope: Scope) => {
    const need: readonly DeclaredNeed[] = Object.freeze([{ scopes: [scope] }]);
    return declare(() => need);
  },
  /** schema:write and the like: the scope, and a key that covers every table. */
  everyTable: (scope: Scope) => {
    const need: readonly DeclaredNeed[] = Object.freeze([{ scopes: [scope], everyTable: true }]);
    return declare(() => need);
  },
  /** Each scope on the table the path names (:table or :tableId), and on the tables the request reaches through it (rowNeeds). */
  onTable: (...scopes: Scope[]) => declare((request) => rowNeeds(request, ...scopes)),
  /** Any one of the scopes on the path's table (an upload URL: rows:create or rows:update). */
  anyOnTable: (...scopes: Scope[]) => declare((request) => [{ scopes, table: pathTable(request) }]),
  /** Needs worked out from the request (a batch's operations, an import's mode). */
  rule: (rule: AccessRule) => declare(rule),
};

/**
 * Installs the stage in the /api plugin (call before registering its routes): every route gets the
 * check as its first preHandler. A key with every scope on every table passes at once, without a
 * promise; a limited key has the tables its route names looked up (memoised by the catalog).
 */
export function installAccess(api: FastifyInstance, catalog: TableCatalog, db: MetaDb): void {
  api.addHook('onRoute', (route: RouteOptions) => {
    const access = route.config?.access;
    if (!access) {
      throw new Error(`${String(route.method)} ${route.url} declares no access: give it one of needs' declarations (src/http/access.ts) in its options`);
    }
    const check = (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
      const grant = request.principal?.grant;
      if (!grant || isFullGrant(grant)) return done();
      let declared: readonly DeclaredNeed[];
      try {
        declared = access(request);
      } catch (err) {
        return done(err as Error);
      }
      if (declared.length === 0) return done();
      authorize(grant, declared, catalog, db).then(() => done(), done);
    };
    const existing = route.preHandler ? [route.preHandler].flat() : [];
    route.preHandler = [check, ...existing];
  });
}

/** Checks declared needs against a grant: the first it does not meet throws its 403. */
export async function authorize(grant: Grant, declared: readonly DeclaredNeed[], catalog: TableCatalog, db: MetaDb): Promise<void> {
  for (const d of declared) {
    if (d.reach) {
      for (const id of await reachedTables(catalog, db, d.table ?? '', d.reach, d.reachSelf === true)) {
        const found = await catalog.find(db, id);
        const refused = refusal(grant, [{ scopes: d.scopes, table: { ref: id, id, name: found?.code ?? id } }]);
        if (refused) throw refused;
      }
      continue;
    }
    let table: Need['table'];
    if (d.table !== undefined) {
      const found = d.table === '' || d.table.includes('\u0000') ? undefined : await catalog.find(db, d.table);
      table = { ref: d.table, id: found?.id, name: found?.code ?? d.table };
    }
    const refused = refusal(grant, [{ scopes: d.scopes, table, everyTable: d.everyTable }]);
    if (refused) throw d.placed ? d.placed(refused) : refused;
  }
}
