import type { FastifyInstance } from 'fastify';
import { invalid } from '../errors.ts';

/**
 * API writes (POST, PUT, PATCH, DELETE) take no query parameters: one given is a mistake (a
 * misspelt route or option), not noise to ignore. One rule for every route.
 */
export function installWriteQueryRule(app: FastifyInstance): void {
  app.addHook('preValidation', async (request) => {
    if (request.method === 'GET' || request.method === 'HEAD' || !request.url.startsWith('/api/')) return;
    const keys = Object.keys((request.query as Record<string, unknown> | undefined) ?? {});
    if (keys.length > 0) {
      throw invalid(keys.map((path) => ({ path, message: 'unknown query parameter; this route takes none' })), 'Invalid query');
    }
  });
}
