import type { FastifyInstance } from 'fastify';
import { ServiceError } from '../domain/errors.ts';
import type { Database } from '../store/database.ts';

export function healthRoutes(app: FastifyInstance, database: Database): void {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (request) => {
    try {
      await database.ping();
    } catch (err) {
      request.log.warn({ err }, 'database not ready');
      throw new ServiceError('unavailable', 'The database is not reachable');
    }
    return { status: 'ok' };
  });
}
