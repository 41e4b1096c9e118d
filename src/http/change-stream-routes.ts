import type { OutgoingHttpHeaders } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../domain/errors.ts';
import { tableRefusal } from '../domain/access.ts';
import { keyGrant } from '../store/auth-store.ts';
import { authorize, needs, pathTable } from './access.ts';
import { isObject } from '../domain/json.ts';
import { withLinkedTables } from '../store/links/linked-tables.ts';
import type { TableDef } from '../domain/table.ts';
import { type StreamQuery, parseStreamQuery, parseStreamUrlRequest } from '../domain/requests/stream-query.ts';
import { checkUrlSignature, urlSignature } from '../files/signed-urls.ts';
import { planChangeStream } from '../plan/change-plans.ts';
import type { ChangeStreams, StreamBody } from '../stream/change-streams.ts';
import type { ChangeLog } from '../store/change-log.ts';
import { tableOr404 } from '../store/execute.ts';
import { changesGone } from './changes-routes.ts';
import type { RowsDeps } from './rows-routes.ts';

/**
 * A table's change stream (issue 31, CONTRACT §14), as Server-Sent Events:
 *
 * - `GET /api/tables/{t}/changes/stream?after&filter` with X-API-Key (and `Last-Event-ID` on a reconnect);
 * - `POST /api/tables/{t}/changes/stream-url {filter?, expiresIn?}` → `{url, expiresAt}`: the same
 *   stream at a signed URL, for a client that cannot send X-API-Key (a browser's EventSource). The
 *   URL names the table, the key that asked for it and the filter, all signed (files/signed-urls.ts,
 *   as the file URLs are); it admits new connections (EventSource's reconnects included) until it
 *   expires, and each stream it opened reads as that key: it ends when the key is revoked.
 * - `GET /streams/tables/{tableId}/changes?filter&key&expires&signature[&after]`: that URL, outside
 *   /api (no key: the signature is its key).
 *
 * The streams themselves: stream/change-streams.ts.
 */

export interface StreamDeps {
  rows: RowsDeps;
  log: ChangeLog;
  streams: ChangeStreams;
}

/** What a stream URL's signature covers: its purpose, the table, the key and the filter (and its expiry). */
const urlParts = (tableId: string, keyId: string, filterText: string | undefined) => ['change-stream', tableId, keyId, filterText ?? ''];

/** Answers the request with the table's stream from the position the query asks for (a 410 when it is older than the log's retention). */
async function openStream(deps: StreamDeps, reply: FastifyReply, table: TableDef, keyId: string, q: StreamQuery): Promise<FastifyReply> {
  const db = deps.rows.database.db;
  const purged = await deps.log.purgedThrough(db, table.id);
  if (q.after !== undefined && q.after < purged) throw changesGone(q.after, purged);
  // Where a stream without a cursor starts; also where the table's reader starts, if this is its first stream.
  const start = await deps.log.startingPoint(db, table.id);
  const plan = planChangeStream(table, q, keyId, q.after ?? start);
  // The stream writes its events to the connection itself, each write one socket write of buffers
  // shared by every stream (change-streams.ts): no stream in between to pipe through, no chunk
  // framing (the body runs until the connection closes, as HTTP/1.1 allows and EventSource reads),
  // and not the response's write, which corks the socket and uncorks it on the next tick for each
  // write. Once the socket holds more than its high-water mark (16 KiB beyond what the kernel
  // took), the stream is sent no more until it has passed it on. The headers Fastify's hooks set
  // (x-request-id) go first, with the response's own.
  reply
    .header('content-type', 'text/event-stream; charset=utf-8')
    .header('cache-control', 'no-store')
    // Proxies that buffer answers (nginx) pass this one on as it comes.
    .header('x-accel-buffering', 'no');
  const raw = reply.raw;
  const socket = raw.socket;
  reply.hijack();
  // The client has gone already: nothing to answer.
  if (!socket) return reply;
  raw.useChunkedEncodingByDefault = false;
  raw.writeHead(200, reply.getHeaders() as OutgoingHttpHeaders);
  raw.flushHeaders();
  const body: StreamBody = {
    write: (data) => socket.write(data),
    // The response ends (with no framing, its connection closes once what was written has gone).
    end: () => raw.end(),
    get writableNeedDrain() {
      return socket.writableNeedDrain;
    },
    // 'close': the connection has gone (the client left, or the answer ended).
    once: (event, listener) => (event === 'drain' ? socket.once(event, listener) : raw.once(event, listener)),
    off: (event, listener) => (event === 'drain' ? socket.off(event, listener) : raw.off(event, listener)),
  };
  // A write racing the client's going fails on the socket (the server's own handler has it); the stream ends on 'close'.
  raw.on('error', () => {});
  deps.streams.open(plan, { body, buffered: () => socket.writableLength, abort: () => raw.destroy(), port: socket.remotePort }, start);
  return reply;
}

/** The table as the stream's filter is read against it: with the tables its links lead to (`_some`, `_none`, `_every`). */
const filterLookup = (deps: StreamDeps, table: TableDef) => withLinkedTables(deps.rows.catalog, deps.rows.database.db, table);

/**
 * A stream URL is asked for with its filter in the body: rows:read on the table, and on the tables
 * the filter reaches through links (CONTRACT §12), as a stream's query asks them (http/access.ts).
 */
const streamUrlNeeds = needs.rule((request) => {
  const table = pathTable(request);
  const body = request.body;
  const filter = isObject(body) && body.filter !== undefined && body.filter !== null ? JSON.stringify(body.filter) : undefined;
  return [{ scopes: ['rows:read'], table }, ...(filter === undefined ? [] : [{ scopes: ['rows:read' as const], table, reach: { filter } }])];
});

/** The routes under /api (api-plugin.ts), behind the key check. */
export function changeStreamRoutes(api: FastifyInstance, deps: StreamDeps): void {
  api.get<{ Params: { table: string }; Querystring: Record<string, unknown> }>('/api/tables/:table/changes/stream', needs.onTable('rows:read'), async (request, reply) => {
    const table = await tableOr404(deps.rows, request.params.table);
    const q = parseStreamQuery(request.query, request.headers['last-event-id'], await filterLookup(deps, table));
    return openStream(deps, reply, table, keyOf(request), q);
  });

  api.post<{ Params: { table: string } }>('/api/tables/:table/changes/stream-url', streamUrlNeeds, async (request) => {
    const table = await tableOr404(deps.rows, request.params.table);
    const { filterText, expiresIn } = parseStreamUrlRequest(request.body, await filterLookup(deps, table));
    const keyId = keyOf(request);
    const expires = Math.floor(Date.now() / 1000) + expiresIn;
    const query = new URLSearchParams();
    if (filterText !== undefined) query.set('filter', filterText);
    query.set('key', keyId);
    query.set('expires', String(expires));
    query.set('signature', urlSignature(deps.rows.secret, urlParts(table.id, keyId, filterText), expires));
    return { url: `${deps.rows.publicUrl}/streams/tables/${encodeURIComponent(table.id)}/changes?${query}`, expiresAt: new Date(expires * 1000).toISOString() };
  });
}

/** The signed stream URL, outside /api (public: its signature is its key). */
export function signedChangeStreamRoutes(open: FastifyInstance, deps: StreamDeps): void {
  open.get<{ Params: { tableId: string }; Querystring: Record<string, unknown> }>('/streams/tables/:tableId/changes', async (request, reply) => {
    const { key, expires, signature, ...rest } = request.query;
    const filterText = typeof rest.filter === 'string' ? rest.filter : undefined;
    const keyId = typeof key === 'string' ? key : '';
    const problem = checkUrlSignature(deps.rows.secret, urlParts(request.params.tableId, keyId, filterText), { expires, signature }, Math.floor(Date.now() / 1000));
    if (problem === 'expired') throw forbidden('This stream URL has expired: ask for a new one (POST /api/tables/{t}/changes/stream-url) and resume with after=<the last id>');
    if (problem) throw forbidden('This stream URL is not valid (altered or incomplete): use it exactly as it was issued');
    if (!(await deps.streams.keyUsable(keyId))) throw forbidden('The API key this stream URL was issued for is revoked, expired or deleted');
    const table = await tableOr404(deps.rows, request.params.tableId);
    // The stream acts as the key it was issued for: its scopes apply when it opens, as they did when it was issued.
    const grant = await keyGrant(deps.rows.database.db, keyId);
    const refused = grant && tableRefusal(grant, 'rows:read', table.id, table.code ?? table.id);
    if (refused) throw refused;
    // …and on the tables its filter reaches through links.
    if (grant && filterText !== undefined) await authorize(grant, [{ scopes: ['rows:read'], table: table.id, reach: { filter: filterText } }], deps.rows.catalog, deps.rows.database.db);
    const q = parseStreamQuery(rest, request.headers['last-event-id'], await filterLookup(deps, table));
    return openStream(deps, reply, table, keyId, q);
  });
}

const forbidden = (message: string) => new ServiceError('bad_signature', message);

function keyOf(request: FastifyRequest): string {
  if (!request.principal) throw new ServiceError('unauthorized', 'X-API-Key header is required');
  return request.principal.keyId;
}
