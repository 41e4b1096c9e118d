import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { PassThrough, type Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../domain/errors.ts';

/**
 * What happens to request bodies the service does not read to their end (an early answer: the rest
 * is drained, or the socket closed nginx's way, lingering), and to bodies that stop arriving (408
 * after `idleMs` without a byte, time the service spends not reading excepted). File routes read a
 * stream of their own (`streamedBody`), so destroying it leaves the socket alone. Why each bound is
 * what it is: docs/decisions.md, "Running and configuration".
 */

/** A declared body this small is read to its end after the answer, and the connection kept (as Node itself does). */
const DRAIN_KEEP_ALIVE_BYTES = 64 * 1024;
/** Lingering reads at most this many times the route's body limit (and at least LINGER_MIN_BYTES)... */
const LINGER_LIMITS = 4;
const LINGER_MIN_BYTES = 64 * 1024 * 1024;
/** ...for at most this long in all... */
const LINGER_MS = 30_000;
/** ...and at most this long without a byte. */
const LINGER_IDLE_MS = 5_000;

export interface BodyOptions {
  /** A body that stops arriving for this long, while the service waits for it, fails with 408. */
  idleMs: number;
  /** The JSON body limit: the bound of lingering on routes that do not name their own. */
  maxBodyBytes: number;
}

/** A request whose body was still arriving when its handling began. */
interface Watched {
  raw: IncomingMessage;
  socket: Socket;
  /** socket.bytesRead at the last sign of progress. */
  bytes: number;
  /** When progress was last seen. */
  since: number;
  /** The stream the route reads instead of the request (file routes), and the route's limit. */
  body?: PassThrough;
  limit?: number;
}

const watchedOf = new WeakMap<IncomingMessage, Watched>();

/** Whether the request has a body at all (a declared length above 0, or a chunked one). */
function hasBody(raw: IncomingMessage): boolean {
  const length = raw.headers['content-length'];
  return raw.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * The body of a route that streams it (uploads, imports), instead of the request itself: ending,
 * failing or destroying it never touches the socket. The route's `limit` bounds lingering after an
 * early answer. A client that goes away mid-body fails it with a 400 (nobody hears it).
 */
export function streamedBody(request: FastifyRequest, payload: Readable, limit: number): Readable {
  const raw = request.raw;
  const body = new PassThrough({ highWaterMark: 64 * 1024 });
  const gone = () => {
    if (!raw.complete) body.destroy(new ServiceError('invalid_request', 'The client closed the connection before the whole body arrived'));
  };
  raw.once('close', gone);
  body.once('close', () => raw.off('close', gone));
  payload.pipe(body);
  const watched = watchedOf.get(raw);
  if (watched) {
    watched.body = body;
    watched.limit = limit;
  } else {
    watchedOf.set(raw, { raw, socket: raw.socket, bytes: 0, since: 0, body, limit });
  }
  return body;
}

export function installBodyHandling(app: FastifyInstance, options: BodyOptions): void {
  const watching = new Set<Watched>();
  /** Requests failed by a stalled body: answered and closed, nothing to linger for. */
  const stalled = new WeakSet<IncomingMessage>();
  let closing = false;

  app.addHook('preParsing', (request, _reply, payload, done) => {
    const raw = request.raw;
    if (!raw.complete && hasBody(raw) && raw.socket) {
      const watched: Watched = { raw, socket: raw.socket, bytes: raw.socket.bytesRead, since: Date.now() };
      watchedOf.set(raw, watched);
      watching.add(watched);
    }
    done(null, payload);
  });

  const stall = (w: Watched) => {
    const seconds = options.idleMs / 1000;
    const err = new ServiceError('request_timeout', `The request body stopped arriving: nothing came for ${seconds} second${seconds === 1 ? '' : 's'}`);
    stalled.add(w.raw);
    if (w.body && !w.body.destroyed) w.body.destroy(err);
    // Fastify's JSON reader listens for errors of the request: it answers 408.
    else if (w.raw.listenerCount('error') > 0) w.raw.emit('error', err);
    else w.socket.destroy();
  };

  // One timer looks at every body in progress, rather than a timer per request.
  const scan = setInterval(() => {
    const now = Date.now();
    for (const w of watching) {
      const { raw, socket } = w;
      if (raw.complete || raw.destroyed || socket.destroyed) {
        watching.delete(w);
        continue;
      }
      const read = socket.bytesRead;
      // Bytes came, or the service is not reading (its reader is busy, or not reading yet): not the client's stall.
      if (read !== w.bytes || raw.readableFlowing !== true || raw.readableLength > 0) {
        w.bytes = read;
        w.since = now;
      } else if (now - w.since >= options.idleMs) {
        watching.delete(w);
        stall(w);
      }
    }
  }, Math.min(1000, Math.max(100, options.idleMs / 4)));
  scan.unref();

  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onClose', (_instance, done) => {
    clearInterval(scan);
    watching.clear();
    done();
  });

  app.addHook('onSend', (request, reply, payload, done) => {
    // While shutting down, no connection is kept for a next request.
    if (closing) reply.header('connection', 'close');
    const raw = request.raw;
    if (!raw.complete && hasBody(raw)) answeredEarly(request, reply);
    done(null, payload);
  });

  /** The answer goes out before the body has all arrived: the rest is read and dropped, within bounds. */
  function answeredEarly(request: FastifyRequest, reply: FastifyReply): void {
    const raw = request.raw;
    const watched = watchedOf.get(raw);
    if (watched) watching.delete(watched);
    if (watched?.body) {
      raw.unpipe(watched.body);
      watched.body.destroy();
    }
    if (stalled.has(raw) || !raw.socket) {
      reply.header('connection', 'close');
      return;
    }
    const declared = Number(raw.headers['content-length']);
    if (raw.headers['transfer-encoding'] === undefined && declared <= DRAIN_KEEP_ALIVE_BYTES && !/close/i.test(String(reply.getHeader('connection') ?? ''))) {
      raw.resume();
      return;
    }
    reply.header('connection', 'close');
    lingerOnClose(raw, Math.max(LINGER_MIN_BYTES, LINGER_LIMITS * (watched?.limit ?? options.maxBodyBytes)));
  }
}

/**
 * Makes Node's close of this socket after the answer (`destroySoon`, for `Connection: close`) a
 * lingering one: the answer is flushed and our side ended, the rest of the body is read and
 * dropped, and the socket is destroyed once the body has ended, the client has closed, or a bound
 * is reached. Destroying it with bytes unread would reset the connection under the answer.
 */
function lingerOnClose(raw: IncomingMessage, maxBytes: number): void {
  const socket = raw.socket;
  raw.resume();
  // An own property over Socket.prototype.destroySoon, for this one close.
  socket.destroySoon = function lingeringClose(this: Socket) {
    Reflect.deleteProperty(this, 'destroySoon');
    this.end();
    if (raw.complete) {
      // Everything arrived meanwhile: an ordinary close, once our side is flushed.
      if (this.writableFinished) this.destroy();
      else this.once('finish', () => this.destroy());
      return;
    }
    let drained = 0;
    const close = () => {
      clearTimeout(total);
      clearTimeout(idle);
      raw.off('data', onData);
      this.destroy();
    };
    const onData = (chunk: Buffer) => {
      drained += chunk.length;
      if (drained > maxBytes) close();
      else idle.refresh();
    };
    const total = setTimeout(close, LINGER_MS);
    const idle = setTimeout(close, LINGER_IDLE_MS);
    total.unref();
    idle.unref();
    raw.on('data', onData);
    // The whole body read: closing now resets nothing.
    raw.once('end', close);
    this.once('close', () => {
      clearTimeout(total);
      clearTimeout(idle);
    });
  };
}
