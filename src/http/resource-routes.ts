import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parseResourceListQuery } from '../domain/resource-query.ts';
import { badRequest } from '../domain/errors.ts';
import { isObject } from '../domain/json.ts';
import { ResourceBodies, objectBody } from '../domain/requests/resource-bodies.ts';
import type { ResourceStore } from '../store/resources/resource-store.ts';
import { type Scope, allTables, refusal } from '../domain/access.ts';
import { needs } from './access.ts';
import { writeContext } from './auth.ts';

/** The scopes each resource's reads and writes need (CONTRACT §12). */
const RESOURCE_SCOPES: Record<string, { read: Scope; write: Scope }> = {
  tables: { read: 'schema:read', write: 'schema:write' },
  flows: { read: 'flows:read', write: 'flows:write' },
  'flow-deliveries': { read: 'flows:read', write: 'flows:write' },
  'environment-variables': { read: 'resources:read', write: 'resources:write' },
  members: { read: 'resources:read', write: 'resources:write' },
  'api-keys': { read: 'keys:manage', write: 'keys:manage' },
};

/**
 * `relations` embed members (CONTRACT §9): a key limited in its scopes embeds them only if it may
 * read members (CONTRACT §12), else 403 naming the scope. Checked once the item's own refusal (its
 * table) has been given: that one names what the request is about.
 */
export function requireMembersRead(request: FastifyRequest, relations: readonly string[]): void {
  const grant = request.principal?.grant;
  const refused = relations.length > 0 && grant ? refusal(grant, [{ scopes: [RESOURCE_SCOPES.members.read] }]) : null;
  if (refused) throw refused;
}

/** The `relations` of a request for a single item, its only query parameter (else 400). */
export function itemRelations(request: FastifyRequest, store: ResourceStore): string[] {
  const { relations, ...rest } = request.query as Record<string, unknown>;
  if (Object.keys(rest).length > 0) throw badRequest(`Unknown query parameter ${Object.keys(rest).join(', ')}: only relations applies to a single item`);
  return parseResourceListQuery(relations === undefined ? {} : { relations }, store.queryable).relations;
}

/** The uniform CRUD routes of one generic resource (the seed spec's "Generic resources", CONTRACT §9). */
export function resourceRoutes(app: FastifyInstance, store: ResourceStore): void {
  const base = `/api/${store.spec.name}`;
  const bodies = new ResourceBodies(store.spec);
  type WithId = { Params: { id: string } };
  const scopes = RESOURCE_SCOPES[store.spec.name];
  if (!scopes) throw new Error(`resource ${store.spec.name} has no scopes in RESOURCE_SCOPES (http/resource-routes.ts)`);
  // Tables are what a key's `tables` limits: reading one needs schema:read on it, and changing any
  // needs a key that covers every table (schema:write with tables ["*"]).
  const isTables = store.spec.name === 'tables';
  const read = needs.scope(scopes.read);
  const readOne = isTables ? needs.rule((request) => [{ scopes: [scopes.read], table: (request.params as { id: string }).id }]) : read;
  const write = isTables ? needs.everyTable(scopes.write) : needs.scope(scopes.write);
  // Items that belong to a table (tables, flows, their deliveries): a key limited to some tables
  // lists only theirs, and is refused another's (CONTRACT §12).
  const limitedTables = (request: FastifyRequest): readonly string[] | undefined => {
    const grant = request.principal?.grant;
    return store.spec.tableRef && grant && !allTables(grant) ? grant.tables : undefined;
  };

  app.get(base, read, async (request) => {
    const q = parseResourceListQuery(request.query as Record<string, unknown>, store.queryable);
    requireMembersRead(request, q.relations);
    const { items, nextOffset } = await store.list(q, limitedTables(request));
    return { data: items, pagination: { limit: q.limit, count: items.length, offset: q.offset, nextOffset } };
  });

  app.get<WithId>(`${base}/:id`, readOne, async (request) => {
    const relations = itemRelations(request, store);
    const item = await store.get(await store.resolveId(request.params.id), relations);
    const grant = request.principal?.grant;
    if (grant && limitedTables(request)) {
      const refused = await store.tableRefusal(item, grant, scopes.read);
      if (refused) throw refused;
    }
    requireMembersRead(request, relations);
    return item;
  });

  // The service writes these items itself: no write routes (a write answers 404, as any unknown route).
  if (store.spec.readOnly) return;

  // A create's answer as an Idempotency-Key keeps it: without what is stored nowhere (a key's secret).
  const unkept = store.spec.unkeptAnswers;
  const create = unkept ? { config: { ...write.config, keptBody: (body: string) => withoutAnswers(body, unkept) } } : write;

  app.post(base, create, async (request, reply) => {
    const [item] = await store.create([bodies.create(request.body)], writeContext(request));
    return reply.status(201).send(item);
  });

  app.put<WithId>(`${base}/:id`, write, async (request) => {
    const body = objectBody(request.body);
    const input = bodies.update(body, await store.resolveId(request.params.id));
    const [item] = await store.update([input], writeContext(request));
    return item;
  });

  app.delete<WithId>(`${base}/:id`, write, async (request) => {
    const [item] = await store.remove([await store.resolveId(request.params.id)], writeContext(request));
    return item;
  });

  app.post(`${base}/create-many`, create, async (request, reply) => {
    const inputs = bodies.createMany(request.body);
    return reply.status(201).send({ data: inputs.length === 0 ? [] : await store.create(inputs, writeContext(request)) });
  });

  app.put(`${base}/update-many`, write, async (request) => {
    const inputs = bodies.updateMany(request.body);
    return { data: inputs.length === 0 ? [] : await store.update(inputs, writeContext(request)) };
  });

  app.delete(`${base}/delete-many`, write, async (request) => {
    const ids = bodies.deleteMany(request.body);
    return { data: ids.length === 0 ? [] : await store.remove(ids, writeContext(request)) };
  });
}

/** A create's answer (an item, or `{data: [item…]}`; an error is left as it is) without the items' properties `names`. */
function withoutAnswers(body: string, names: readonly string[]): string {
  const answer: unknown = JSON.parse(body);
  if (!isObject(answer)) return body;
  const items = Array.isArray(answer.data) ? answer.data : [answer];
  for (const item of items) if (isObject(item)) for (const name of names) delete item[name];
  return JSON.stringify(answer);
}
