import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import type { Config } from './config.ts';
import { bootstrap } from './store/bootstrap.ts';
import { type Database, openDatabase } from './store/database.ts';
import { migrate } from './store/migrations.ts';

export interface RunningServer {
  app: FastifyInstance;
  database: Database;
  /** Stops accepting connections, lets requests in flight finish (bounded), closes the database. */
  stop(): Promise<void>;
}

/** Opens the database, migrates, bootstraps, and serves until stopped. */
export async function startServer(config: Config, out: (line: string) => void = console.log): Promise<RunningServer> {
  const database = await openDatabase(config.databaseUrl);
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
    out(`Rowhouse is listening on ${config.publicUrl} (database: ${database.dialect.name})`);

    let stopping: Promise<void> | null = null;
    const stop = () => {
      stopping ??= (async () => {
        const force = setTimeout(() => app.server.closeAllConnections(), config.shutdownTimeoutMs);
        force.unref();
        try {
          await app.close();
        } finally {
          clearTimeout(force);
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
