import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HttpError, statusName } from '../errors.ts';
import type { Dialect } from '../store/dialect.ts';

/** Every error on every route leaves in the one format (CONTRACT §3); a 500 never shows its cause. */
export function installErrorHandling(app: FastifyInstance, dialect: Dialect): void {
  app.setErrorHandler((err: FastifyError | HttpError, request, reply) => {
    if (err instanceof HttpError) return reply.status(err.statusCode).send(err.toBody());
    const known = databaseError(err, dialect);
    if (known) return reply.status(known.statusCode).send(known.toBody());
    const status = typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    if (status < 500) {
      return reply.status(status).send({ statusCode: status, error: statusName(status), message: clientMessage(err, request.headers['content-type']) });
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

/** Database errors a request can meet through no fault of the service, as the statuses they are. */
function databaseError(err: unknown, dialect: Dialect): HttpError | undefined {
  if (dialect.isSchemaChanged(err)) {
    return new HttpError(409, "The table's fields changed while this request ran; send it again");
  }
  if (dialect.isTooManyColumns(err)) {
    return new HttpError(400, 'The table has reached the database\'s limit of columns (fields removed over time count too): create a new table');
  }
  return undefined;
}

/** Fastify's own 4xx messages, made to name what is at fault where they do not. */
function clientMessage(err: FastifyError, contentType: string | undefined): string {
  if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return contentType
      ? `Content-Type ${contentType} is not supported: the body must be JSON (Content-Type: application/json)`
      : 'The request has a body but no Content-Type: the body must be JSON (Content-Type: application/json)';
  }
  return err.message;
}

/** Errors Fastify answers before routing (a malformed URL): the same format, with a request id. */
export function frameworkErrors(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const status = typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 400;
  const message = err.code === 'FST_ERR_BAD_URL' ? `The URL ${request.url} is not valid: check its percent-encoding` : err.message;
  reply.header('x-request-id', request.id).status(status).send({ statusCode: status, error: statusName(status), message });
}

/** A path parameter longer than the router takes: answered on the raw response, in the same format. */
export function onMaxParamLength(path: string, _req: IncomingMessage, res: ServerResponse): void {
  const body = JSON.stringify({ statusCode: 414, error: statusName(414), message: `A path segment of ${path.slice(0, 100)}… is too long` });
  res.writeHead(414, { 'content-type': 'application/json; charset=utf-8', 'x-request-id': randomUUID(), 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
