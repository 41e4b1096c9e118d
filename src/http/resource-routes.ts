import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parseResourceListQuery } from '../domain/resource-query.ts';
import { badRequest, invalid } from '../domain/errors.ts';
import { MAX_MANY, type ResourceStore } from '../store/resources/resource-store.ts';
import type { Attrs } from '../store/resources/resource-spec.ts';
import { writeContext } from './auth.ts';
import { isObject } from '../domain/json.ts';

function objectBody(request: FastifyRequest): Attrs {
  if (!isObject(request.body)) throw badRequest('The body must be a JSON object');
  return request.body;
}

function arrayBody(request: FastifyRequest, of: string): unknown[] {
  const body = request.body;
  if (!Array.isArray(body)) throw badRequest(`The body must be a JSON array of ${of}`);
  if (body.length > MAX_MANY) throw badRequest(`At most ${MAX_MANY} items per request, got ${body.length}`);
  return body;
}

/** The uniform CRUD routes of one generic resource (the seed spec's "Generic resources", CONTRACT §9). */
export function resourceRoutes(app: FastifyInstance, store: ResourceStore): void {
  const base = `/api/${store.spec.name}`;
  type WithId = { Params: { id: string } };

  app.get(base, async (request) => {
    const q = parseResourceListQuery(request.query as Record<string, unknown>, store.queryable);
    const { items, nextOffset } = await store.list(q);
    return { data: items, pagination: { limit: q.limit, count: items.length, offset: q.offset, nextOffset } };
  });

  app.get<WithId>(`${base}/:id`, async (request) => {
    const { relations, ...rest } = request.query as Record<string, unknown>;
    if (Object.keys(rest).length > 0) throw badRequest(`Unknown query parameter ${Object.keys(rest).join(', ')}: only relations applies to a single item`);
    const q = parseResourceListQuery(relations === undefined ? {} : { relations }, store.queryable);
    return store.get(await store.resolveId(request.params.id), q.relations);
  });

  // The service writes these items itself: no write routes (a write answers 404, as any unknown route).
  if (store.spec.readOnly) return;

  app.post(base, async (request, reply) => {
    const [input] = store.validate([objectBody(request)], 'create', false);
    const [item] = await store.create([input], writeContext(request));
    return reply.status(201).send(item);
  });

  app.put<WithId>(`${base}/:id`, async (request) => {
    const body = objectBody(request);
    const id = await store.resolveId(request.params.id);
    if (body.id !== undefined && body.id !== id) {
      // Only a string is named: String() of a deeply nested array recurses past the stack.
      throw badRequest(typeof body.id === 'string' ? `id: the body names ${body.id} but the path names ${id}` : `id: must be ${id}, the id the path names`);
    }
    const [input] = store.validate([{ ...body, id }], 'update', false);
    const [item] = await store.update([input], writeContext(request));
    return item;
  });

  app.delete<WithId>(`${base}/:id`, async (request) => {
    const [item] = await store.remove([await store.resolveId(request.params.id)], writeContext(request));
    return item;
  });

  app.post(`${base}/create-many`, async (request, reply) => {
    const inputs = store.validate(arrayBody(request, 'objects'), 'create', true);
    return reply.status(201).send({ data: inputs.length === 0 ? [] : await store.create(inputs, writeContext(request)) });
  });

  app.put(`${base}/update-many`, async (request) => {
    const body = arrayBody(request, 'objects with an id');
    const noId = body.flatMap((item, i) => (isObject(item) && typeof item.id === 'string' ? [] : [{ path: `[${i}].id`, message: 'each item must be an object with a string id' }]));
    if (noId.length > 0) throw invalid(noId, 'Invalid update-many');
    const inputs = store.validate(body, 'update', true);
    return { data: inputs.length === 0 ? [] : await store.update(inputs, writeContext(request)) };
  });

  app.delete(`${base}/delete-many`, async (request) => {
    const ids = arrayBody(request, 'ids');
    const notIds = ids.flatMap((id, i) => (typeof id === 'string' && id !== '' ? [] : [{ path: `[${i}]`, message: 'each item must be an id string' }]));
    if (notIds.length > 0) throw invalid(notIds, 'Invalid delete-many');
    return { data: ids.length === 0 ? [] : await store.remove(ids as string[], writeContext(request)) };
  });
}
