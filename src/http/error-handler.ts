import type { FastifyError, FastifyInstance } from 'fastify';
import { HttpError, statusName } from '../errors.ts';

/** Every error on every route leaves in the one format (CONTRACT §3); a 500 never shows its cause. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | HttpError, request, reply) => {
    if (err instanceof HttpError) {
      return reply.status(err.statusCode).send(err.toBody());
    }
    const status = typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    if (status < 500) {
      return reply.status(status).send({ statusCode: status, error: statusName(status), message: err.message });
    }
    request.log.error({ err, reqId: request.id }, 'request failed');
    return reply.status(500).send({
      statusCode: 500,
      error: statusName(500),
      message: `An internal error occurred; it was logged with request id ${request.id}`,
    });
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0];
    reply.status(404).send({ statusCode: 404, error: statusName(404), message: `Route ${request.method} ${path} not found` });
  });
}
