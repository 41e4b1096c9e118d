import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ServiceError } from '../domain/errors.ts';
import type { Database } from '../store/database.ts';
import { type KeyState, type Principal, authenticate } from '../store/auth-store.ts';
import { MetadataCache } from '../store/metadata-cache.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
}

const unauthorized = (message: string) => new ServiceError('unauthorized', message);

/**
 * Whether the request is for /api. The router's pattern is what counts when a route matched: it
 * decodes the path, so /%61pi/flows reaches /api/flows and must not pass without a key.
 */
function isApiRequest(request: FastifyRequest): boolean {
  const path = request.routeOptions.url ?? request.url.split('?')[0];
  return path === '/api' || path.startsWith('/api/');
}

/** Every /api request carries a valid X-API-Key (CONTRACT §2); the principal is its member. */
export function installAuth(app: FastifyInstance, database: Database): void {
  app.decorateRequest('principal', null);
  const keys = new MetadataCache<KeyState>(database);
  // A callback hook: a key the memo holds is checked without a promise (most requests).
  app.addHook('onRequest', (request, _reply, done) => {
    if (!isApiRequest(request)) return done();
    // Node joins a repeated header into one string, which is then no valid key.
    const key = request.headers['x-api-key'] as string | undefined;
    if (key === undefined || key === '') return done(unauthorized('X-API-Key header is required'));
    const admitted = (principal: Principal | null) => {
      if (!principal) return done(unauthorized('X-API-Key is not a valid API key (unknown, revoked or expired)'));
      request.principal = principal;
      done();
    };
    const principal = authenticate(database.db, key, keys);
    if (principal instanceof Promise) principal.then(admitted, done);
    else admitted(principal);
  });
}

/** The member a write is made by: createdBy/updatedBy. */
export function writeContext(request: FastifyRequest): { memberId: string; now: string } {
  if (!request.principal) throw unauthorized('X-API-Key header is required');
  return { memberId: request.principal.memberId, now: new Date().toISOString() };
}
