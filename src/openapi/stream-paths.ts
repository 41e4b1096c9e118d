import { STREAM_URL_SECONDS } from '../domain/requests/stream-query.ts';
import { type Schema, errorResponses, jsonBody, jsonResponse, ref } from './common.ts';

/**
 * The OpenAPI entries of a table's change stream and its rows' history (issue 31, CONTRACT §14):
 * operations of the table's document (table-document.ts; the service's takes them from there), and
 * the signed stream URL, which needs no key (the service's document only).
 */

const EVENT_STREAM_DESCRIPTION =
  'Server-Sent Events. Each change of the table’s change log, as the feed (`/changes`) gives it: `id: <sequence>`, `event: change`, ' +
  '`data: <the change as JSON>`. A comment line (`: heartbeat`) comes in silence at least every 15 s. To resume after a disconnect, send the ' +
  'last id received as `Last-Event-ID` (a browser’s EventSource does so by itself) or `after`: nothing is missed or repeated. The stream ends ' +
  'when the key is revoked or expires, when the server shuts down, and when the client takes nothing of what it was sent for 30 s; resume then.';

const streamParams = (filter: Schema): Schema[] => [
  { name: 'after', in: 'query', required: false, description: 'The last sequence the client has; without it (or Last-Event-ID) the stream starts with what commits after it opens.', schema: { type: 'integer', minimum: 0 } },
  { ...filter, description: 'Keeps the changes whose row matches this filter before or after the change (the rows filter). JSON text (URL-encoded).' },
  { name: 'Last-Event-ID', in: 'header', required: false, description: 'As `after`; wins over it.', schema: { type: 'string', pattern: '^\\d+$' } },
];

const eventStream = { 200: { description: EVENT_STREAM_DESCRIPTION, content: { 'text/event-stream': { schema: { type: 'string' } } } } };

/** The table document's paths (`t`: its `/api/tables/{id}`) and schemas. */
export function streamPaths(t: string, tags: string[], filter: Schema, rowIdParam: Schema): { paths: Record<string, Schema>; schemas: Record<string, Schema> } {
  return {
    paths: {
      [`${t}/changes/stream`]: {
        get: {
          operationId: 'streamChanges',
          tags,
          summary: 'The table’s changes as they commit, as Server-Sent Events',
          parameters: streamParams(filter),
          responses: { ...eventStream, ...errorResponses(400, 401, 404, 410) },
        },
      },
      [`${t}/changes/stream-url`]: {
        post: {
          operationId: 'changeStreamUrl',
          tags,
          summary: 'A signed URL of the change stream, for a client that cannot send X-API-Key (a browser’s EventSource)',
          description:
            'The URL opens the stream without a key, as the key that asked for it, with the filter given here; it admits new connections (EventSource’s reconnects included) until `expiresAt`. A stream it opened goes on past that, until the key is revoked or expires.',
          requestBody: jsonBody({
            type: 'object',
            properties: {
              filter: { ...ref('Filter'), description: 'The rows filter the stream applies (as a JSON value, not text).' },
              expiresIn: { type: 'integer', minimum: 1, maximum: STREAM_URL_SECONDS.max, default: STREAM_URL_SECONDS.default, description: 'Seconds the URL admits new connections for.' },
            },
            additionalProperties: false,
          }),
          responses: {
            200: jsonResponse('The URL.', {
              type: 'object',
              properties: { url: { type: 'string', format: 'uri' }, expiresAt: { type: 'string', format: 'date-time' } },
              required: ['url', 'expiresAt'],
              additionalProperties: false,
            }),
            ...errorResponses(400, 401, 404, 413, 415),
          },
        },
      },
      [`${t}/rows/{rowId}/history`]: {
        parameters: [rowIdParam],
        get: {
          operationId: 'rowHistory',
          tags,
          summary: 'A row’s changes, newest first, within the change log’s retention (a deleted row’s too)',
          parameters: [
            { name: 'pageSize', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
            { name: 'cursor', in: 'query', required: false, description: 'From the previous page’s `nextUrl`.', schema: { type: 'string' } },
          ],
          responses: {
            200: { ...jsonResponse('The page; follow `nextUrl` until it is null.', ref('ChangeHistory')), headers: { Link: { description: '`<nextUrl>; rel="next"` while there is a next page.', schema: { type: 'string' } } } },
            ...errorResponses(400, 401, 404),
          },
        },
      },
    },
    schemas: {
      ChangeHistory: {
        type: 'object',
        properties: { data: { type: 'array', items: ref('Change') }, nextUrl: { type: ['string', 'null'], format: 'uri' } },
        required: ['data', 'nextUrl'],
        additionalProperties: false,
      },
    },
  };
}

/** The signed stream URL (POST …/changes/stream-url gives it): no key, its signature is its key. The service document's. */
export function signedStreamPaths(filter: Schema): Record<string, Schema> {
  return {
    '/streams/tables/{tableId}/changes': {
      parameters: [{ name: 'tableId', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }],
      get: {
        operationId: 'signedChangeStream',
        tags: ['rows'],
        summary: 'A table’s change stream at the signed URL POST /api/tables/{tableIdOrCode}/changes/stream-url gave',
        description: 'Signed, so it needs no API key: use it as it was given (an EventSource’s URL), adding `after` if need be.',
        security: [],
        parameters: [
          ...streamParams(filter),
          { name: 'key', in: 'query', required: true, schema: { type: 'string' }, description: 'Part of the URL as it was given.' },
          { name: 'expires', in: 'query', required: true, schema: { type: 'string', pattern: '^\\d{1,12}$' }, description: 'Unix seconds; part of the URL as it was given.' },
          { name: 'signature', in: 'query', required: true, schema: { type: 'string' }, description: 'Part of the URL as it was given.' },
        ],
        responses: { ...eventStream, ...errorResponses(400, 403, 404, 410) },
      },
    },
  };
}
