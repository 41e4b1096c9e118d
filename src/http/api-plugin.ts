import type { FastifyPluginAsync } from 'fastify';
import { notFound } from '../domain/errors.ts';
import type { WebhookWorker } from '../events/webhook-worker.ts';
import type { ChangeLog } from '../store/change-log.ts';
import type { ResourceStore } from '../store/resources/resource-store.ts';
import type { RowWriter } from '../store/row-writes.ts';
import { aggregateRoutes } from './aggregate-routes.ts';
import { installAccess } from './access.ts';
import { apiKeyRoutes } from './api-key-routes.ts';
import { installAuth } from './auth.ts';
import { rateLimiter } from './rate-limit.ts';
import type { RateLimit } from '../domain/access.ts';
import { installIdempotency } from './idempotency.ts';
import type { IdempotencyStore } from '../store/idempotency-store.ts';
import { installJsonBodies } from './json-body.ts';
import { bulkRoutes } from './bulk-routes.ts';
import { changesRoutes } from './changes-routes.ts';
import { changeStreamRoutes } from './change-stream-routes.ts';
import { historyRoutes } from './history-routes.ts';
import type { ChangeStreams } from '../stream/change-streams.ts';
import { exportRoutes } from './export-routes.ts';
import { fileRoutes } from './file-routes.ts';
import { flowDeliveryRoutes } from './flow-delivery-routes.ts';
import { importRoutes } from './import-routes.ts';
import { openapiRoutes } from './openapi-routes.ts';
import { resourceRoutes } from './resource-routes.ts';
import { type RowsDeps, rowsRoutes } from './rows-routes.ts';
import { installWriteQueryRule } from './write-query.ts';

export interface ApiDeps {
  rows: RowsDeps;
  writer: RowWriter;
  resources: readonly ResourceStore[];
  /** The flow deliveries' store, for their retry action. */
  deliveries: ResourceStore;
  webhooks: WebhookWorker;
  /** Undefined when the change log is turned off: no feed routes. */
  changes: ChangeLog | undefined;
  /** The change streams (with the change log). */
  streams: ChangeStreams | undefined;
  maxFileBytes: number;
  /** Answers kept for Idempotency-Key (CONTRACT §12). */
  idempotency: IdempotencyStore;
  /** ROWHOUSE_RATE_LIMIT: the rate limit of keys without one (null: none). */
  rateLimit: RateLimit | null;
}

/**
 * Everything under /api, as one encapsulated plugin (registered as it is, with no fastify-plugin
 * wrapper, so its hooks and parser settings stay inside it): the key check, the write-query rule,
 * JSON-only bodies and a not-found handler of its own. Route URLs are written whole ('/api/…').
 */
export function apiPlugin(deps: ApiDeps): FastifyPluginAsync {
  return async (api) => {
    // Only JSON bodies: anything else is a 415, not a string handed to the routes.
    api.removeContentTypeParser(['text/plain']);
    // A body that is not JSON: a 400 naming its line and column.
    installJsonBodies(api);
    installAuth(api, deps.rows.database, rateLimiter(deps.rateLimit));
    installWriteQueryRule(api);
    installAccess(api, deps.rows.catalog, deps.rows.database.db);
    installIdempotency(api, deps.rows.database, deps.idempotency, { keptByCreates: deps.changes !== undefined });
    // Unknown /api paths go through the key check too: 401 without a key, 404 with one. Fastify
    // scopes a not-found handler by route prefix, so it sits in a child under /api; that child
    // inherits the hooks above.
    api.register(
      async (unknown) => {
        unknown.setNotFoundHandler(async (request) => {
          throw notFound(`Route ${request.method} ${request.url.split('?')[0]} not found`);
        });
      },
      { prefix: '/api' },
    );

    const keys = deps.resources.find((store) => store.spec.name === 'api-keys');
    if (keys) apiKeyRoutes(api, keys);
    for (const store of deps.resources) resourceRoutes(api, store);
    flowDeliveryRoutes(api, deps.deliveries, deps.webhooks);
    rowsRoutes(api, deps.rows);
    aggregateRoutes(api, deps.rows);
    bulkRoutes(api, deps.rows, deps.writer);
    exportRoutes(api, deps.rows);
    fileRoutes(api, deps.rows);
    openapiRoutes(api, deps.rows);
    importRoutes(api, deps.rows, deps.maxFileBytes);
    if (deps.changes) changesRoutes(api, deps.rows, deps.changes);
    if (deps.changes && deps.streams) {
      changeStreamRoutes(api, { rows: deps.rows, log: deps.changes, streams: deps.streams });
      historyRoutes(api, deps.rows, deps.changes);
    }
  };
}
