import type { FastifyError, FastifyInstance } from 'fastify';
import { notJson } from './json-syntax-error.ts';

/**
 * JSON bodies, parsed by Fastify's own parser (an empty body refused, the body limit, `__proto__`
 * and `constructor.prototype` keys refused): only a body that is not JSON is answered otherwise,
 * as a 400 naming the line and column where it goes wrong (json-syntax-error.ts) instead of
 * Fastify's message, which names nothing.
 */
export function installJsonBodies(app: FastifyInstance): void {
  // Fastify's defaults (onProtoPoisoning, onConstructorPoisoning): the parser it would use itself.
  const parse = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body: string, done) => {
    parse(request, body, (err, value) => {
      if ((err as FastifyError | null)?.code === 'FST_ERR_CTP_INVALID_JSON_BODY') return done(syntaxError(body) ?? err, undefined);
      done(err, value);
    });
  });
}

/** Why `body` is not JSON; undefined when it is (Fastify refused it for a prototype key: its answer stands). */
function syntaxError(body: string): Error | undefined {
  // As Fastify's parser reads it: a byte order mark at the start is skipped.
  const text = body.charCodeAt(0) === 0xfeff ? body.slice(1) : body;
  try {
    JSON.parse(text);
    return undefined;
  } catch (err) {
    return notJson(text, err);
  }
}
