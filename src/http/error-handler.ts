import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type ErrorBody, type ErrorCode, type HttpError, codeOfStatus, errorBody } from '../errors.ts';
import { toHttpError } from '../store/database-errors.ts';
import type { Dialect } from '../store/dialect.ts';

/**
 * Every error on every route leaves in the one format (CONTRACT §3); a 500 never shows its cause.
 * Each is logged with its code, as Fastify's own handler logs them: a client's error at info, a fault at error.
 */
export function installErrorHandling(app: FastifyInstance, dialect: Dialect): void {
  app.setErrorHandler((err: FastifyError | HttpError, request, reply) => {
    // The last resort for the database errors no caller classified (a table changed under the request).
    const known = toHttpError(err, dialect);
    if (known) return sendError(request, reply, known.code, known.toBody());
    const status = typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    if (status < 500) return sendError(request, reply, codeOfStatus(status), errorBody(status, clientMessage(err, request.headers['content-type'])));
    request.log.error({ err, code: 'internal', reqId: request.id }, 'request failed');
    return reply.status(500).send(errorBody(500, `An internal error occurred; it was logged with request id ${request.id}`));
  });

  app.setNotFoundHandler((request, reply) => {
    sendError(request, reply, 'not_found', errorBody(404, `Route ${request.method} ${request.url.split('?')[0]} not found`));
  });
}

/** An error the service answers for what it is: logged with its code (never in the body), then sent. */
function sendError(request: FastifyRequest, reply: FastifyReply, code: ErrorCode, body: ErrorBody): FastifyReply {
  request.log[body.statusCode < 500 ? 'info' : 'warn']({ code, statusCode: body.statusCode }, body.message);
  return reply.status(body.statusCode).send(body);
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
  // The path only: the query may hold a signed URL's signature, and this message is logged.
  const message = err.code === 'FST_ERR_BAD_URL' ? `The URL ${request.url.split('?')[0]} is not valid: check its percent-encoding` : err.message;
  sendError(request, reply.header('x-request-id', request.id), codeOfStatus(status), errorBody(status, message));
}

/** A path parameter longer than the router takes: answered on the raw response, in the same format. */
export function onMaxParamLength(path: string, _req: IncomingMessage, res: ServerResponse): void {
  const body = JSON.stringify(errorBody(414, `A path segment of ${path.slice(0, 100)}… is too long`));
  res.writeHead(414, { 'content-type': 'application/json; charset=utf-8', 'x-request-id': randomUUID(), 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
