import { createHash, hash } from 'node:crypto';
import { PassThrough, Readable, pipeline } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod, RouteOptions } from 'fastify';
import { ServiceError, invalid } from '../domain/errors.ts';
import type { Database } from '../store/database.ts';
import { errorBody, serviceErrorBody } from './error-body.ts';
import { type IdempotencyStore, type IdempotentRequest, type KeptAnswer, inFlight } from '../store/idempotency-store.ts';
import { AnswerKeptByWrite, HeldTransaction } from '../store/request-transaction.ts';
import type { AnswerWithWrite } from '../store/change-entries.ts';

/**
 * Idempotent retries (CONTRACT §12): a POST, PUT, PATCH or DELETE under /api with an
 * Idempotency-Key runs once per API key and key; a repeat with the same method, path and body
 * answers what the first answered (Idempotent-Replayed: true), another request under the key is a
 * 422, and a repeat while the first runs a 409. The answer is kept in the same transaction as the
 * writes it answers (store/request-transaction.ts): after a crash both exist or neither. A 5xx, or
 * a client gone before the answer, keeps nothing and writes nothing: the retry runs.
 *
 * A single-row create (a route marked keptByCreate), whose answer is its row's record and known
 * before it writes, keeps it in its own write instead, as a plain create writes alone (AnswerKeptByWrite):
 * no lookup first, no transaction of its own. Whenever that does not hold (the key has a record, the
 * create is refused, or it is no plain create), nothing was written and the request runs again the
 * general way. There a client gone after the write finds its answer kept: the retry is its replay.
 */

declare module 'fastify' {
  interface FastifyRequest {
    idempotency: Idempotent | null;
  }
  interface FastifyContextConfig {
    /** A single-row create's answer, when it creates: this status and type, the row's record as the body (keptByCreate). */
    answerOfCreate?: CreateAnswer;
    /**
     * The body to keep of the route's answer, when not all of it may be stored (a new API key's
     * secret, which the service stores only as a hash: CONTRACT §2): a replay answers that.
     */
    keptBody?: (body: string) => string;
  }
}

/** What a create answers (its body: the created row's record). */
type CreateAnswer = Omit<KeptAnswer, 'body'>;

interface Idempotent {
  request: IdempotentRequest;
  /** Its held transaction; made when first needed for a create keeping its answer (most never need one). */
  held: HeldTransaction<KeptAnswer> | undefined;
  /** While its answer is to be kept by its create's own write (and what that answer is); undefined once it runs in `held`. */
  byCreate: { scope: AnswerKeptByWrite; answer: CreateAnswer } | undefined;
  /** The in-process slot it holds (API key and key). */
  slot: string;
  /** Whether the answer may be kept: not a 409 about the key itself. */
  keep: boolean;
  ended: boolean;
  /** Whether its transaction began in the stage (counted in `opened` until it ends). */
  eager: boolean;
  /** A streamed body (an import's file): its hash once it has been read whole, else undefined. */
  streamedHash?: () => string | undefined;
}

/**
 * The answer a request's single-row create is to keep in its own write (http/auth.ts writeContext
 * hands it to the write), while the request runs so; undefined once it runs in a held transaction.
 */
export function keptAnswerOf(request: FastifyRequest): AnswerWithWrite | undefined {
  return request.idempotency?.byCreate?.scope.answer;
}

/**
 * A single-row create route's options (an access declaration): with an Idempotency-Key and no
 * query parameters (`expand` makes another answer), its answer when it creates is the row's record
 * with this status and type, kept by the create's own write.
 */
export function keptByCreate<T extends { config: object }>(options: T, answer: CreateAnswer): T {
  return { ...options, config: { ...options.config, answerOfCreate: answer } };
}

export const IDEMPOTENCY_HEADER = 'idempotency-key';
const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const OPENED_AT_ONCE = 4;
const PRINTABLE = /^[\x20-\x7e]{1,255}$/;

/** The header's value, checked: 1–255 printable ASCII characters (else a 400 naming it). */
function headerKey(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  const text = Array.isArray(value) ? value.join(', ') : value;
  if (PRINTABLE.test(text)) return text;
  const problem = text.length === 0 ? 'must not be empty' : text.length > 255 ? `must be at most 255 characters, got ${text.length}` : 'must be printable ASCII characters only';
  throw invalid([{ path: 'Idempotency-Key', message: `${problem} (1–255 printable ASCII characters)` }], 'Invalid Idempotency-Key header');
}

const sha256 = () => createHash('sha256');

/** A streamed body passed on through a hash of its bytes: the hash once the body has been read to its end. */
function hashedStream(body: Readable): { stream: Readable; hash: () => string | undefined } {
  const hash = sha256();
  let digest: string | undefined;
  const tap = new PassThrough({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      done(null, chunk);
    },
    flush(done) {
      digest = hash.digest('hex');
      done();
    },
  });
  // Errors of the body (a 413) reach the reader, and a reader that stops ends the body.
  pipeline(body, tap, () => {});
  return { stream: tap, hash: () => digest };
}

async function hashWhole(body: Readable): Promise<string> {
  const hash = sha256();
  for await (const chunk of body) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

const mismatch = (key: string, what: string) =>
  new ServiceError('idempotency_mismatch', `Idempotency-Key ${JSON.stringify(key)} was used for another request (${what}): use a new key for a new request`);

/** A route's hooks of one kind (none, one or a list) with `hook` after them. */
const withHook = <H>(hooks: H | H[] | undefined, hook: H): H[] => [...(hooks === undefined ? [] : ([hooks].flat() as H[])), hook];

/** Whether a request has no query parameters. */
function noQuery(request: FastifyRequest): boolean {
  for (const _ in (request.query as object | null) ?? {}) return false;
  return true;
}

/**
 * Installs the stage in the /api plugin, for its write routes (call before registering them, and
 * after the authorization stage, http/access.ts: it runs after it). `keptByCreates`: whether
 * creates keep their answers in their own writes (they do with the change log, whose one step
 * holds them: ChangeLog.writeAlone).
 */
export function installIdempotency(api: FastifyInstance, database: Database, store: IdempotencyStore, options: { keptByCreates: boolean }): void {
  api.decorateRequest('idempotency', null);
  /** Keys of requests running on this instance (other instances: IdempotencyStore.claim). */
  const running = new Set<string>();
  /**
   * Requests whose transaction began in the stage, each holding a pooled connection while its
   * handler runs: at most OPENED_AT_ONCE (the pool has 10), so handlers that read outside their
   * transaction always find a connection; beyond it a request takes the lazy path.
   */
  let opened = 0;

  const heldFor = (described: IdempotentRequest) =>
    new HeldTransaction<KeptAnswer>(database, {
      begin: (tx) => store.claim(tx, described),
      finish: (tx, answer) => store.keep(tx, described, answer),
    });

  /**
   * The stage's first part, at once: the key checked and its slot taken. A create whose answer is
   * its row's record is let run at once, its answer kept by its write with no lookup first (a
   * record of the key fails it: runByCreate); else answers what `admit` is to look up.
   */
  const take = (request: FastifyRequest, answerOfCreate: CreateAnswer | undefined): { described: IdempotentRequest; slot: string } | undefined => {
    const key = headerKey(request.headers[IDEMPOTENCY_HEADER]);
    if (key === undefined || !request.principal) return undefined;
    const keyId = request.principal.keyId;
    const slot = `${keyId}\n${key}`;
    if (running.has(slot)) throw inFlight(key);
    const body = request.body;
    const streamed = body instanceof Readable;
    const described: IdempotentRequest = { keyId, key, method: request.method, path: request.url, bodyHash: streamed ? '' : hash('sha256', JSON.stringify(body ?? null), 'hex') };
    if (answerOfCreate && options.keptByCreates && !streamed && noQuery(request)) {
      const scope = new AnswerKeptByWrite(store.keptWithWrite(described, answerOfCreate));
      running.add(slot);
      request.idempotency = { request: described, held: undefined, byCreate: { scope, answer: answerOfCreate }, slot, keep: true, ended: false, eager: false };
      return undefined;
    }
    running.add(slot);
    return { described, slot };
  };

  /**
   * The key's kept answer answered again (or a 422 for another request), else the request is let
   * run, its writes in a held transaction (request.idempotency). The slot, taken, is freed when it
   * is not let run.
   */
  const admit = async (request: FastifyRequest, reply: FastifyReply, described: IdempotentRequest, slot: string) => {
    request.idempotency = null;
    try {
      await lookUp(request, reply, described, slot);
    } catch (err) {
      running.delete(slot);
      throw err;
    }
    // A replay was answered: the slot is free again.
    if (!request.idempotency) running.delete(slot);
  };

  const lookUp = async (request: FastifyRequest, reply: FastifyReply, described: IdempotentRequest, slot: string) => {
    let streamedHash: (() => string | undefined) | undefined;
    const body = request.body;
    const streamed = body instanceof Readable;
    const held = heldFor(described);
    // Several writers (PostgreSQL): the request's transaction begins here, the key locked and its
    // record read in its first statement; a record found ends it. Else the record is read outside.
    // (A streamed body may run long before its first write: its transaction begins with it.)
    const eager = store.locks && !streamed && opened < OPENED_AT_ONCE;
    if (eager) opened++;
    let kept: Awaited<ReturnType<IdempotencyStore['find']>>;
    try {
      kept = eager ? await held.openWith((tx) => store.open(tx, described)) : await store.find(described.keyId, described.key);
      if (kept && eager) await held.end(null);
    } catch (err) {
      if (eager) opened--;
      throw err;
    }
    if (kept && eager) opened--;
    if (kept) {
      if (body instanceof Readable) described.bodyHash = await hashWhole(body);
      if (kept.method !== described.method || kept.path !== described.path) throw mismatch(described.key, `${kept.method} ${kept.path}`);
      if (kept.bodyHash !== described.bodyHash) throw mismatch(described.key, 'another body');
      reply.code(kept.status).header('idempotent-replayed', 'true');
      if (kept.contentType) reply.header('content-type', kept.contentType);
      reply.send(kept.body ?? undefined);
      return;
    }
    if (body instanceof Readable) {
      const hashed = hashedStream(body);
      request.body = hashed.stream;
      streamedHash = hashed.hash;
    }
    request.idempotency = { request: described, slot, keep: true, ended: false, streamedHash, held, eager, byCreate: undefined };
  };

  /**
   * A request whose create is to keep its answer: its handler runs in that scope. When it throws
   * before the answer was kept, nothing of it was written (the key has a record, the create was
   * refused, or it asked for another write): the request then runs again as any other, its key
   * looked up (a replay, a 422) and its writes in a held transaction (a 4xx is kept there).
   */
  function runByCreate(self: FastifyInstance, handler: RouteHandlerMethod, request: FastifyRequest, reply: FastifyReply, state: Idempotent, scope: AnswerKeptByWrite) {
    const again = async (err: unknown) => {
      if (scope.kept !== undefined || reply.sent) throw err;
      await admit(request, reply, state.request, state.slot);
      const general = request.idempotency;
      if (!general) return reply;
      return heldOf(general).scope(() => handler.call(self, request, reply));
    };
    // Its answer goes to the create in the request's WriteContext (keptAnswerOf). (No async
    // function of its own: a promise less for each create that keeps its answer.)
    try {
      return Promise.resolve(handler.call(self, request, reply)).catch(again);
    } catch (err) {
      return again(err);
    }
  }

  /** The request's held transaction, made now if it has none yet. */
  const heldOf = (state: Idempotent): HeldTransaction<KeptAnswer> => (state.held ??= heldFor(state.request));

  /** Ends the request's held transaction: commits with `answer` (null: rolls back). */
  const end = async (request: FastifyRequest, answer: KeptAnswer | null): Promise<void> => {
    const state = request.idempotency;
    if (!state || state.ended) return;
    state.ended = true;
    try {
      // Kept already, with its create.
      if (state.byCreate?.scope.kept !== undefined) return;
      await heldOf(state).end(answer);
    } finally {
      running.delete(state.slot);
      if (state.eager) opened--;
    }
  };

  api.addHook('onRoute', (route: RouteOptions) => {
    const methods = [route.method].flat();
    if (!methods.some((m) => WRITES.has(m))) return;
    const handler = route.handler as RouteHandlerMethod;
    const answerOfCreate = route.config?.answerOfCreate;
    // The handler's writes go into the request's held transaction, when it has one (or its create keeps the answer).
    route.handler = function (this: FastifyInstance, request, reply) {
      const state = request.idempotency;
      if (!state) return handler.call(this, request, reply);
      if (state.byCreate) return runByCreate(this, handler, request, reply, state, state.byCreate.scope);
      return heldOf(state).scope(() => handler.call(this, request, reply));
    };
    // A callback hook: a write without the header (most), or a create keeping its answer, costs no promise. A replay has answered: the chain stops.
    const stageHook = (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
      if (request.headers[IDEMPOTENCY_HEADER] === undefined) return done();
      let admitting: Promise<void>;
      try {
        const taken = take(request, answerOfCreate);
        if (!taken) return done();
        admitting = admit(request, reply, taken.described, taken.slot);
      } catch (err) {
        return done(err as Error);
      }
      admitting.then(
        () => {
          if (!reply.sent) done();
        },
        (err: Error) => done(err),
      );
    };
    route.preHandler = withHook(route.preHandler, stageHook);
    // The stage's other hooks, on write routes only (after the instance's own of each kind, as
    // instance hooks of the /api plugin would run): reads, which never hold a key's request, skip them.
    route.onError = withHook(route.onError, onError);
    route.onSend = withHook(route.onSend, onSend);
    route.onResponse = withHook(route.onResponse, abandon);
    route.onRequestAbort = withHook(route.onRequestAbort, onRequestAbort);
  });

  // The 409 of a key in flight is about the key, not the request's answer: never kept.
  const onError = (request: FastifyRequest, _reply: FastifyReply, error: Error, done: () => void) => {
    if (request.idempotency && (error as { code?: unknown }).code === 'idempotency_in_flight') request.idempotency.keep = false;
    done();
  };

  // A callback hook: the answers of requests without a key (most) cost no promise.
  const onSend = (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: Error | null, payload?: unknown) => void) => {
    const state = request.idempotency;
    if (!state || state.ended) return done(null, payload);
    const byCreate = state.byCreate;
    if (byCreate && byCreate.scope.kept !== undefined) {
      // Kept with its create, committed: the answer sent must be that one (a replay answers it).
      state.ended = true;
      running.delete(state.slot);
      if (payload !== byCreate.scope.kept || reply.statusCode !== byCreate.answer.status || reply.getHeader('content-type') !== byCreate.answer.contentType) {
        request.log.error({ status: reply.statusCode }, 'the answer to a create with an Idempotency-Key is not the one its write kept: a replay answers the kept one');
      }
      return done(null, payload);
    }
    if (state.streamedHash) state.request.bodyHash = state.streamedHash() ?? '';
    const textual = payload === null || payload === undefined || typeof payload === 'string' || Buffer.isBuffer(payload);
    // Kept: every answer below 500 to a request read whole. A 5xx keeps nothing (and writes nothing): the retry runs.
    const keep = state.keep && reply.statusCode < 500 && textual && state.request.bodyHash !== '';
    const contentType = reply.getHeader('content-type');
    const answer: KeptAnswer | null = keep
      ? { status: reply.statusCode, contentType: typeof contentType === 'string' ? contentType : null, body: keptText(payload, request.routeOptions.config.keptBody) }
      : null;
    end(request, answer).then(
      () => done(null, payload),
      (err: unknown) => {
        // Nothing written: the answer goes out unkept (another instance holds or has answered the key; a retry sees it).
        if (!state.held?.holdsWrites) {
          request.log.info({ err }, 'the answer to a request with an Idempotency-Key was not kept');
          return done(null, payload);
        }
        // The writes and their answer did not commit: neither is there, and the client may retry.
        reply.header('content-type', 'application/json; charset=utf-8');
        if (err instanceof ServiceError && err.code === 'idempotency_in_flight') {
          // The key's record was taken at the commit (another request's with this key, or another
          // key's of the same hash while it lives): the 409 of a key in flight, nothing written.
          reply.code(409);
          return done(null, JSON.stringify(serviceErrorBody(err)));
        }
        request.log.error({ err }, 'committing a request with an Idempotency-Key failed');
        reply.code(503);
        done(null, JSON.stringify(errorBody(503, 'The request could not be committed; nothing of it was kept: send it again')));
      },
    );
  };

  // A request whose answer was never sent (its client gone): nothing of it is kept (but what its
  // create kept with it). A request without a key, or whose answer ended it (onSend), costs no promise.
  const abandon = (request: FastifyRequest, _reply: unknown, done: () => void) => {
    if (!request.idempotency || request.idempotency.ended) return done();
    end(request, null).then(() => done(), () => done());
  };
  const onRequestAbort = (request: FastifyRequest, done: () => void) => abandon(request, null, done);
}

/** The body kept of an answer: its text, less what the route keeps nowhere (`keptBody`). */
function keptText(payload: unknown, keptBody: ((body: string) => string) | undefined): string | null {
  if (payload === null || payload === undefined) return null;
  const body = String(payload);
  return keptBody ? keptBody(body) : body;
}
