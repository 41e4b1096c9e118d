import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type ServerResponse, maxHeaderSize } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorCode } from '../domain/errors.ts';
import { toServiceError } from '../store/database-errors.ts';
import type { Dialect } from '../store/dialect.ts';
import { type ErrorBody, errorBody, serviceErrorBody, statusName } from './error-body.ts';
import { codeOfStatus } from './error-status.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The code of the error answered, for the access log; null when the answer is no error. */
    errorCode: ErrorCode | null;
  }
}

/**
 * Every error on every route leaves in the one format (CONTRACT §3); a 500 never shows its cause.
 * Each is logged with its code: a client's error at debug (its access log line says it at info),
 * an unavailable database at warn, a fault at error with its stack.
 */
export function installErrorHandling(app: FastifyInstance, dialect: Dialect): void {
  app.decorateRequest('errorCode', null);
  app.setErrorHandler((err: FastifyError, request, reply) => {
    // A ServiceError; or, the last resort, a database error no caller classified (a table changed under the request).
    const known = toServiceError(err, dialect);
    if (known) return sendError(request, reply, known.code, serviceErrorBody(known));
    const status = typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    if (status < 500) return sendError(request, reply, codeOfStatus(status), errorBody(status, clientMessage(err, request.headers['content-type'])));
    request.errorCode = 'internal';
    request.log.error({ err, code: 'internal', reqId: request.id }, 'request failed');
    return reply.status(500).send(errorBody(500, `An internal error occurred; it was logged with request id ${request.id}`));
  });

  app.setNotFoundHandler((request, reply) => {
    sendError(request, reply, 'not_found', errorBody(404, `Route ${request.method} ${request.url.split('?')[0]} not found`));
  });
}

/** An error the service answers for what it is: logged with its code (never in the body), then sent. */
function sendError(request: FastifyRequest, reply: FastifyReply, code: ErrorCode, body: ErrorBody): FastifyReply {
  // The access log line (access-log.ts) carries the status and code of every answer; the message is for debugging.
  request.errorCode = code;
  request.log[body.statusCode < 500 ? 'debug' : 'warn']({ code, statusCode: body.statusCode }, body.message);
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

/** How long a connection answered by clientError may take to close after the answer (the client reads it, then closes). */
const CLIENT_ERROR_CLOSE_MS = 5_000;
const answeredSockets = new WeakSet<Socket>();

/** The status and message of what Node's HTTP parser refused before any route saw the request. */
function clientErrorAnswer(code: string | undefined): [number, string] {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return [431, `The request line and headers are larger than ${maxHeaderSize / 1024} KiB: shorten the URL (a long filter or sort) or the headers`];
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [408, 'The request was not received in time'];
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return [413, 'The chunk extensions of the request body are too large'];
    default:
      return [400, `The request is not valid HTTP/1.1${code ? ` (${code})` : ''}`];
  }
}

/**
 * Node's `clientError` (a request its parser refuses: headers over 16 KiB, malformed HTTP, headers
 * too slow): an answer in the one error format that says `Connection: close`, then a close that
 * lets the client read it. The parser cannot go on after such an error, so the connection cannot
 * serve another request; closing it at once, with the rest of the request unread, would reset it
 * under the answer.
 */
export function clientErrorHandler(this: FastifyInstance, err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  // A parser in error reports again on every later read: the first answer is the only one.
  if (answeredSockets.has(socket)) return;
  answeredSockets.add(socket);
  const [status, message] = clientErrorAnswer(err.code);
  this.log.debug({ code: codeOfStatus(status), statusCode: status, parserCode: err.code }, message);
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  // Bytes of another answer already on the wire: nothing can be added to them.
  if (!socket.writable || (inFlight && inFlight.headersSent)) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify(errorBody(status, message));
  socket.write(
    `HTTP/1.1 ${status} ${statusName(status)}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${randomUUID()}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
  socket.end();
  const timer = setTimeout(() => socket.destroy(), CLIENT_ERROR_CLOSE_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  // The client closing its side after reading the answer ends it here too.
  socket.once('end', () => socket.destroy());
}
