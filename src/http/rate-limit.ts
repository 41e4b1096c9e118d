import type { FastifyReply, FastifyRequest } from 'fastify';
import { type RateLimit, effectiveRateLimit } from '../domain/access.ts';
import { ServiceError } from '../domain/errors.ts';

/**
 * Rate limits per API key (CONTRACT §12): a token bucket per key on each instance, holding
 * `requests` tokens and refilled at `requests` per `perSeconds`; each request takes one. A key's
 * own `rateLimit`, else ROWHOUSE_RATE_LIMIT's, else none. Every answer to a limited key carries
 * RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers); one over the limit is a
 * 429 with Retry-After. Each instance counts on its own, and the count survives no restart.
 */

interface Bucket {
  limit: RateLimit;
  tokens: number;
  /** When `tokens` was last worked out (ms). */
  at: number;
}

/** A request's turn at its key's bucket: the error to answer (429), or undefined to go on. */
export type RateLimiter = (request: FastifyRequest, reply: FastifyReply) => ServiceError | undefined;

/**
 * The limiter of the /api plugin, run by the key check (auth.ts) in its own hook once the principal
 * is known: one hook a request rather than two.
 */
export function rateLimiter(fallback: RateLimit | null, now: () => number = Date.now): RateLimiter {
  const buckets = new Map<string, Bucket>();
  return (request, reply) => {
    const principal = request.principal;
    if (!principal) return undefined;
    const limit = effectiveRateLimit(principal.rateLimit, fallback);
    if (!limit) return undefined;
    const t = now();
    let bucket = buckets.get(principal.keyId);
    // A new key, or its limit changed (PUT rateLimit): a full bucket of the new size.
    if (!bucket || bucket.limit.requests !== limit.requests || bucket.limit.perSeconds !== limit.perSeconds) {
      bucket = { limit, tokens: limit.requests, at: t };
      buckets.set(principal.keyId, bucket);
    }
    const perMs = limit.requests / (limit.perSeconds * 1000);
    bucket.tokens = Math.min(limit.requests, bucket.tokens + (t - bucket.at) * perMs);
    bucket.at = t;
    const allowed = bucket.tokens >= 1;
    if (allowed) bucket.tokens -= 1;
    const seconds = (tokens: number) => Math.max(0, Math.ceil(tokens / perMs / 1000));
    reply.header('ratelimit-policy', `${limit.requests};w=${limit.perSeconds}`);
    reply.header('ratelimit', `limit=${limit.requests}, remaining=${Math.floor(bucket.tokens)}, reset=${seconds(limit.requests - bucket.tokens)}`);
    if (allowed) return undefined;
    const wait = Math.max(1, seconds(1 - bucket.tokens));
    reply.header('retry-after', String(wait));
    return new ServiceError('rate_limited', `This key has used its ${limit.requests} requests per ${limit.perSeconds} s: try again in ${wait} s`);
  };
}
