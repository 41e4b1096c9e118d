import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * One access log line per request, at info (issue 17, item 4): method, the route's pattern (never
 * the URL as sent: its query may hold a signed URL's signature, its path a row id), status,
 * duration, request id (`reqId`, bound by Fastify's request logger), the API key's id (never the
 * key), and the code of an error answer. A request the client abandoned before its answer was
 * complete is logged with `aborted: true` and no status. Installed only when info is enabled, so
 * `ROWHOUSE_LOG_LEVEL=warn` costs nothing per request.
 */
export function installAccessLog(app: FastifyInstance): void {
  // With no logger (tests) Fastify's stand-in has no level at all.
  if (!['trace', 'debug', 'info'].includes(app.log.level)) return;
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info(line(request, reply, false), 'request');
    done();
  });
  app.addHook('onRequestAbort', (request, done) => {
    request.log.info(line(request, null, true), 'request aborted');
    done();
  });
}

interface AccessLine {
  method: string;
  route: string | null;
  /** Only for a request no route matched (a 404): its path, without the query. */
  path?: string;
  status: number | null;
  /** Milliseconds from the request's arrival to the end of its answer; null when it was aborted. */
  ms: number | null;
  keyId: string | null;
  code?: string;
  aborted?: true;
}

function line(request: FastifyRequest, reply: FastifyReply | null, aborted: boolean): AccessLine {
  const route = request.routeOptions.url ?? null;
  const out: AccessLine = {
    method: request.method,
    route,
    status: reply ? reply.statusCode : null,
    ms: reply ? Math.round(reply.elapsedTime * 10) / 10 : null,
    keyId: request.principal?.keyId ?? null,
  };
  if (route === null) out.path = request.url.split('?', 1)[0].slice(0, 200);
  if (request.errorCode) out.code = request.errorCode;
  if (aborted) out.aborted = true;
  return out;
}
