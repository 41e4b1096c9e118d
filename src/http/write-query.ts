import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import { invalid } from '../domain/errors.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A write whose options are query parameters (its body is a file): it checks them itself. */
    queryOptions?: boolean;
  }
}

/** API writes (POST, PUT, PATCH, DELETE) take no query parameters: one given is a mistake (a misspelt route or option), not noise to ignore. */
function rejectQuery(request: FastifyRequest, _reply: unknown, done: (err?: Error) => void): void {
  const keys = Object.keys((request.query as Record<string, unknown> | undefined) ?? {});
  if (keys.length === 0) return done();
  done(invalid(keys.map((path) => ({ path, message: 'unknown query parameter; this route takes none' })), 'Invalid query'));
}

/** Row writes whose answer can expand links take `expand` (checked by the route) and nothing else. */
function rejectQueryButExpand(request: FastifyRequest, _reply: unknown, done: (err?: Error) => void): void {
  const keys = Object.keys((request.query as Record<string, unknown> | undefined) ?? {}).filter((k) => k !== 'expand');
  if (keys.length === 0) return done();
  done(invalid(keys.map((path) => ({ path, message: 'unknown query parameter; this route takes only expand' })), 'Invalid query'));
}

/**
 * One rule for every write route of the /api plugin (api-plugin.ts), attached to those routes only
 * (call before registering them): reads pay nothing for it.
 */
export function installWriteQueryRule(api: FastifyInstance): void {
  api.addHook('onRoute', (route: RouteOptions) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (methods.every((m) => m === 'GET' || m === 'HEAD')) return;
    // A write whose options are query parameters (its body is a file) checks them itself.
    if (route.config?.queryOptions) return;
    const existing = route.preValidation ? (Array.isArray(route.preValidation) ? route.preValidation : [route.preValidation]) : [];
    const expands = (route.config as { expand?: boolean } | undefined)?.expand === true;
    route.preValidation = [...existing, expands ? rejectQueryButExpand : rejectQuery];
  });
}

/** A write route's options (an access declaration) with `expand` allowed in its query (CONTRACT §11). */
export function expanding<T extends { config: object }>(options: T): T {
  return { ...options, config: { ...options.config, expand: true } };
}
