import dc from 'node:diagnostics_channel';
import type { FastifyInstance, RouteOptions } from 'fastify';

/**
 * Every route an app registers, seen through Fastify's initialization channel: buildApp readies
 * the app before a test sees it, so its routes can only be watched as they are added. Import this
 * module before the first app is built (a test file's imports run before its tests).
 */

export interface RegisteredRoute {
  /** Upper case, as Fastify has it: GET, HEAD, POST, … */
  method: string;
  /** The pattern, with :parameters. */
  url: string;
}

const registered = new Map<FastifyInstance, RegisteredRoute[]>();
dc.subscribe('fastify.initialization', (message) => {
  const { fastify } = message as { fastify: FastifyInstance };
  const routes: RegisteredRoute[] = [];
  registered.set(fastify, routes);
  fastify.addHook('onRoute', (route: RouteOptions) => {
    for (const method of [route.method].flat()) routes.push({ method: method.toUpperCase(), url: route.url });
  });
});

/** The routes `app` registered, in registration order (HEAD included, as Fastify adds one for each GET). */
export function registeredRoutes(app: FastifyInstance): RegisteredRoute[] {
  const routes = registered.get(app);
  if (!routes || routes.length === 0) throw new Error('no routes seen: import test/support/routes.ts before building the app');
  return routes;
}

/** The parameter names of a route pattern, in order: /api/tables/:table/rows/:rowId → table, rowId. */
export const routeParams = (url: string): string[] => [...url.matchAll(/:([A-Za-z]+)/g)].map((m) => m[1]);
