import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import type { Config } from './config.ts';
import { bootstrap } from './store/bootstrap.ts';
import { type Database, openDatabase } from './store/database.ts';
import { migrate } from './store/migrations.ts';

export interface RunningServer {
  app: FastifyInstance;
  database: Database;
  /**
   * Stops accepting connections, answers long polls at once, lets requests in flight finish for up
   * to config.shutdownTimeoutMs (then closes their connections), closes the database.
   */
  stop(): Promise<void>;
}

/**
 * Deletes uploads never attached once older than the TTL, and the bytes of released files a
 * crash left behind: at start and then every minute (more often for a TTL under two minutes).
 * Every instance sweeps; the claims in rh_files make each file deleted once. Changes older than
 * their retention, and the expired answers of Idempotency-Key, go at the same times.
 */
function sweepFiles(app: FastifyInstance, config: Config, database: Database): { stop(): Promise<void> } {
  // A sweep still running when the next is due (a slow storage) is left to finish: none overlap.
  let running: Promise<unknown> | null = null;
  const sweep = () => {
    if (running) return;
    const cutoff = new Date(Date.now() - config.changesRetentionSeconds * 1000).toISOString();
    running = Promise.all([
      app.files.sweep().catch((err) => app.log.warn(`sweeping files: ${(err as Error).message}`)),
      app.changes?.purge(database.db, cutoff).catch((err) => app.log.warn(`deleting old changes: ${(err as Error).message}`)),
      app.idempotency.sweep().catch((err) => app.log.warn(`deleting expired idempotency keys: ${(err as Error).message}`)),
    ]).finally(() => {
      running = null;
    });
  };
  sweep();
  const timer = setInterval(sweep, Math.min(60, Math.max(1, config.uploadTtlSeconds / 2)) * 1000);
  timer.unref();
  return {
    // The database closes after this: a sweep under way finishes first rather than fail on it.
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}

/** Opens the database, migrates, bootstraps, and serves until stopped. */
export async function startServer(config: Config, out: (line: string) => void = console.log): Promise<RunningServer> {
  const database = await openDatabase(config.databaseUrl, config);
  try {
    await migrate(database.db, database.dialect);
    const boot = await bootstrap(database.db, { secret: config.secret, apiKey: config.apiKey });
    if (boot.createdKey) {
      out('');
      out('Rowhouse created the owner member and an API key. It is shown only this once; keep it:');
      out(`  X-API-Key: ${boot.createdKey}`);
      out('');
    }
    const app = await buildApp({ config, database, secret: boot.secret });
    await app.listen({ port: config.port, host: config.host });
    const sweeper = sweepFiles(app, config, database);
    app.webhooks.start();
    out(`Rowhouse is listening on ${config.publicUrl} (database: ${database.dialect.label})`);

    let stopping: Promise<void> | null = null;
    const stop = () => {
      stopping ??= (async () => {
        // Past the bound, connections still open are closed, answered or not.
        const force = setTimeout(() => app.server.closeAllConnections(), config.shutdownTimeoutMs);
        force.unref();
        // Answers sent from now on say Connection: close (request-bodies.ts), but one whose headers
        // went out before (a streaming export) leaves its connection open and idle when it ends:
        // closed as soon as it is, rather than after the keep-alive timeout.
        const idle = setInterval(() => app.server.closeIdleConnections(), 200);
        idle.unref();
        try {
          await app.close();
        } finally {
          clearTimeout(force);
          clearInterval(idle);
          await sweeper.stop();
          await database.close();
        }
      })();
      return stopping;
    };
    return { app, database, stop };
  } catch (err) {
    await database.close();
    throw err;
  }
}
