import type { FastifyInstance } from 'fastify';
import type { ResourceStore } from '../store/resources/resource-store.ts';
import { needs } from './access.ts';
import { writeContext } from './auth.ts';
import { itemRelations, requireMembersRead } from './resource-routes.ts';

/** GET /api/api-keys/me (CONTRACT §12): the calling key's own record, for any valid key; `relations` as for a key by id. */
export function apiKeyRoutes(app: FastifyInstance, keys: ResourceStore): void {
  app.get('/api/api-keys/me', needs.anyKey(), async (request) => {
    const { keyId } = writeContext(request);
    // As a key by id: `relations` only (embedding its member needs resources:read).
    const relations = itemRelations(request, keys);
    requireMembersRead(request, relations);
    return keys.get(keyId, relations);
  });
}
