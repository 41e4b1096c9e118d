import type { FastifyInstance } from 'fastify';
import type { ResourceStore } from '../store/resources/resource-store.ts';
import { needs } from './access.ts';
import { writeContext } from './auth.ts';

/** GET /api/api-keys/me (CONTRACT §12): the calling key's own record, for any valid key. */
export function apiKeyRoutes(app: FastifyInstance, keys: ResourceStore): void {
  app.get('/api/api-keys/me', needs.anyKey(), async (request) => {
    const { keyId } = writeContext(request);
    return keys.get(keyId);
  });
}
