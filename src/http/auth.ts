import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Grant, RateLimit } from '../domain/access.ts';
import { ServiceError } from '../domain/errors.ts';
import type { Database } from '../store/database.ts';
import type { AnswerWithWrite } from '../store/change-entries.ts';
import { keptAnswerOf } from './idempotency.ts';
import { type KeyState, type Principal, authenticate } from '../store/auth-store.ts';
import { MetadataCache } from '../store/metadata-cache.ts';
import type { RateLimiter } from './rate-limit.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
}

const unauthorized = (message: string) => new ServiceError('unauthorized', message);

/** Every request carries a principal (null outside /api): one shape for all, which the access log reads. */
export function decoratePrincipal(app: FastifyInstance): void {
  app.decorateRequest('principal', null);
}

/**
 * Every /api request carries a valid X-API-Key (CONTRACT §2); the principal is its member.
 * Installed in the /api plugin (api-plugin.ts), so it runs for its routes and its not-found
 * handler only: the router decodes the path, so /%61pi/flows reaches /api/flows and this hook.
 */
export function installAuth(api: FastifyInstance, database: Database, limit: RateLimiter): void {
  const keys = new MetadataCache<KeyState>(database);
  // A callback hook: a key the memo holds is checked without a promise (most requests). The key's
  // rate limit is taken in the same hook (rate-limit.ts), once the principal is known.
  api.addHook('onRequest', (request, reply, done) => {
    // Node joins a repeated header into one string, which is then no valid key.
    const key = request.headers['x-api-key'] as string | undefined;
    if (key === undefined || key === '') return done(unauthorized('X-API-Key header is required'));
    const admitted = (principal: Principal | null) => {
      if (!principal) return done(unauthorized('X-API-Key is not a valid API key (unknown, revoked or expired)'));
      request.principal = principal;
      const limited = limit(request, reply);
      if (limited) done(limited);
      else done();
    };
    const principal = authenticate(database.db, key, keys);
    if (principal instanceof Promise) principal.then(admitted, done);
    else admitted(principal);
  });
}

/** The member a write is made by: createdBy/updatedBy. */
export function writeContext(request: FastifyRequest): {
  memberId: string;
  now: string;
  keyId: string;
  grant: Grant;
  rateLimit: RateLimit | null;
  keptAnswer: AnswerWithWrite | undefined;
} {
  if (!request.principal) throw unauthorized('X-API-Key header is required');
  const { memberId, keyId, grant, rateLimit } = request.principal;
  return { memberId, now: new Date().toISOString(), keyId, grant, rateLimit, keptAnswer: keptAnswerOf(request) };
}
