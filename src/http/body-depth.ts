import type { FastifyInstance } from 'fastify';
import { MAX_BODY_DEPTH, tooDeepAt } from '../domain/json.ts';
import { badRequest } from '../domain/errors.ts';

/** At most this many steps of the path are quoted in the message (the rest is `…`). */
const QUOTED_STEPS = 8;

/**
 * A JSON body nesting arrays and objects more than MAX_BODY_DEPTH levels is a 400 naming where,
 * before any route walks it (JSON.parse takes any depth; JSON.stringify and recursive checks
 * overflow the stack, and stored JSON deeper than 1,000 levels breaks SQLite's JSON functions).
 * Row values have their own, lower bound (MAX_VALUE_DEPTH, row-values.ts), reported for their field.
 */
export function installBodyDepthLimit(app: FastifyInstance): void {
  app.addHook('preValidation', (request, _reply, done) => {
    const body = request.body;
    // Only what the JSON parser made: a streamed body (uploads, imports) is a stream object.
    if (typeof body !== 'object' || body === null || !(Array.isArray(body) || Object.getPrototypeOf(body) === Object.prototype)) return done();
    const at = tooDeepAt(body, MAX_BODY_DEPTH);
    if (at === null) return done();
    const steps = at.match(/\[\d+\]|\.[^.[]*/g) ?? [];
    const where = (steps.slice(0, QUOTED_STEPS).join('') + (steps.length > QUOTED_STEPS ? '…' : '')).replace(/^\./, '') || '(the body)';
    done(
      badRequest(`The JSON body nests more than ${MAX_BODY_DEPTH} levels of arrays and objects, at ${where}`, [
        { path: where, message: `nests more than ${MAX_BODY_DEPTH} levels of arrays and objects` },
      ]),
    );
  });
}
