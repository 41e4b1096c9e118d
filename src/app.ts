import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, LogController } from 'fastify';
import type { Config } from './config.ts';
import { clientErrorHandler, frameworkErrors, installErrorHandling, onMaxParamLength } from './http/error-handler.ts';
import { installAccessLog } from './http/access-log.ts';
import { standardOutputLog } from './http/log-destination.ts';
import { installBodyDepthLimit } from './http/body-depth.ts';
import { installBodyHandling } from './http/request-bodies.ts';
import { decoratePrincipal } from './http/auth.ts';
import { apiPlugin } from './http/api-plugin.ts';
import { publicPlugin } from './http/public-plugin.ts';
import { Files } from './files/files.ts';
import { openStorage } from './files/storage.ts';
import type { Database } from './store/database.ts';
import { apiKeysSpec } from './store/resources/api-keys.ts';
import { environmentVariables } from './store/resources/environment-variables.ts';
import { flowsSpec } from './store/resources/flows.ts';
import { flowDeliveries } from './store/resources/flow-deliveries.ts';
import { DeliveryStore } from './events/delivery-store.ts';
import { WebhookSender } from './events/webhook-sender.ts';
import { WebhookWorker } from './events/webhook-worker.ts';
import { members } from './store/resources/members.ts';
import { ResourceStore } from './store/resources/resource-store.ts';
import { tablesSpec } from './store/resources/tables.ts';
import { RowWriter } from './store/row-writes.ts';
import { RowStore } from './store/rows.ts';
import { LinkWrites } from './store/links/link-writes.ts';
import { TableCatalog } from './store/table-catalog.ts';
import { ChangeLog } from './store/change-log.ts';
import { IdempotencyStore } from './store/idempotency-store.ts';
import { entryRecordJson } from './render/row-json.ts';
import { ChangeStreams } from './stream/change-streams.ts';
import { signedChangeStreamRoutes } from './http/change-stream-routes.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** File attachments, for the sweeper (server.ts) and tests. */
    files: Files;
    /** The change log (null when turned off), for its retention (server.ts) and tests. */
    changes: ChangeLog | null;
    /** The webhook delivery worker: started by server.ts (and by tests that want deliveries). */
    webhooks: WebhookWorker;
    /** The change streams open on this instance (null with the change log off), for tests. */
    changeStreams: ChangeStreams | null;
    /** Answers kept for Idempotency-Key: swept by server.ts once expired. */
    idempotency: IdempotencyStore;
  }
}

export interface AppDeps {
  config: Config;
  database: Database;
  /** The signing secret for cursors and URLs. */
  secret: string;
  /** false silences the log, access lines included (tests). */
  logger?: boolean;
  /** Where the log goes instead of stdout (tests that read it). */
  logStream?: NodeJS.WritableStream;
  /** File attachments over a storage of the caller's (tests); by default config.storage's. */
  files?: Files;
  /** The webhook worker's longest sleep between looks at the queue (tests shorten it); default 1 s. */
  webhookPollMs?: number;
  /** Change streams: the silence before a comment line (default 10 s), and how long a client may take nothing before it is cut off (default 30 s). */
  stream?: { heartbeatMs?: number; stallMs?: number };
}

/** The whole HTTP service: auth, the one error format, and every route. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, database } = deps;
  const app = Fastify({
    // Standard output through a buffer (http/log-destination.ts), unless a test gives its own stream.
    logger: deps.logger === false ? false : { level: config.logLevel, stream: deps.logStream ?? standardOutputLog() },
    // Fastify's own two lines per request (with whole request and response objects) halve throughput:
    // access-log.ts writes one small line instead, and only at info.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.maxBodyBytes,
    routerOptions: {
      // Row ids may be 128 characters; table codes 64 (find-my-way's default is 100).
      maxParamLength: 1024,
      onMaxParamLength,
    },
    frameworkErrors,
    // Requests Node's parser refuses (headers over 16 KiB): the one error format, and Connection: close.
    clientErrorHandler,
    genReqId: () => randomUUID(),
    requestIdHeader: 'x-request-id',
    return503OnClosing: true,
  });
  // Set on arrival, so every answer carries it, errors included; a callback hook costs no promise.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });

  installErrorHandling(app, database.dialect);
  installAccessLog(app);
  // The lines still waiting in the buffer go out when the app closes (and at the process's exit).
  if (deps.logger !== false && !deps.logStream) {
    app.addHook('onClose', (_instance, done) => {
      standardOutputLog().flush();
      done();
    });
  }
  installBodyHandling(app, { idleMs: config.bodyTimeoutMs, maxBodyBytes: config.maxBodyBytes });
  decoratePrincipal(app);
  installBodyDepthLimit(app);

  const files =
    deps.files ??
    new Files(database, await openStorage(config.storage), {
      secret: deps.secret,
      publicUrl: config.publicUrl,
      maxFileBytes: config.maxFileBytes,
      uploadTtlSeconds: config.uploadTtlSeconds,
      warn: (message) => app.log.warn(message),
    });
  app.decorate('files', files);
  app.addHook('onClose', () => files.close());

  const changes = config.changeLog ? new ChangeLog(database, (table, row) => entryRecordJson(table, row, database.dialect)) : undefined;
  // One catalog of tables for the rows routes, flows' filters and their planning.
  const catalog = new TableCatalog(database);
  const flows = flowsSpec({ dialect: database.dialect, catalog, allowPrivate: config.webhookAllowPrivate });
  const resources = [environmentVariables, flows, flowDeliveries, members, apiKeysSpec({ defaultRateLimit: config.rateLimit }), tablesSpec(database.dialect, { files, changes })].map(
    (spec) => new ResourceStore(spec, database),
  );
  const sender = new WebhookSender({ allowPrivate: config.webhookAllowPrivate, timeoutMs: config.webhookTimeoutMs });
  const webhooks = new WebhookWorker(
    new DeliveryStore(database, catalog),
    sender,
    {
      attempts: config.webhookAttempts,
      retryBaseMs: config.webhookRetryBaseMs,
      timeoutMs: config.webhookTimeoutMs,
      pollMs: deps.webhookPollMs,
      warn: (message) => app.log.warn(message),
    },
    changes?.committed ?? null,
  );
  app.decorate('webhooks', webhooks);
  app.addHook('onClose', async () => {
    await webhooks.stop();
    sender.close();
  });
  app.decorate('changes', changes ?? null);
  const rowStore = new RowStore(database, files, changes, new LinkWrites(database, catalog));
  const rows = { database, catalog, rows: rowStore, files, secret: deps.secret, publicUrl: config.publicUrl };
  const streams = changes
    ? new ChangeStreams(database, changes, { heartbeatMs: deps.stream?.heartbeatMs ?? 10_000, stallMs: deps.stream?.stallMs ?? 30_000, warn: (message) => app.log.warn(message) })
    : undefined;
  app.decorate('changeStreams', streams ?? null);
  // A shutdown ends the streams at once: they would hold it up until its bound.
  if (streams) {
    app.addHook('preClose', (done) => {
      streams.close();
      done();
    });
  }
  const idempotency = new IdempotencyStore(database, config.idempotencyTtlSeconds);
  app.decorate('idempotency', idempotency);
  app.register(publicPlugin({ database, files, resources, publicUrl: config.publicUrl, maxFileBytes: config.maxFileBytes }));
  if (changes && streams) app.register(async (open) => signedChangeStreamRoutes(open, { rows, log: changes, streams }));
  app.register(
    apiPlugin({
      rows,
      writer: new RowWriter(database, rows.catalog, rows.rows),
      resources,
      deliveries: resources.find((r) => r.spec === flowDeliveries) as ResourceStore,
      webhooks,
      changes,
      streams,
      maxFileBytes: config.maxFileBytes,
      idempotency,
      rateLimit: config.rateLimit,
    }),
  );
  await app.ready();
  return app;
}
