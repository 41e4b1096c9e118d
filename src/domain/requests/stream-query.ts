import { type ErrorDetail, badRequest, invalid } from '../errors.ts';
import { isObject } from '../json.ts';
import { intParam, jsonParam, readQuery } from '../query-string.ts';
import type { FieldLookup } from '../row-columns.ts';
import { type RowFilter, parseRowFilter } from '../row-filter.ts';

/**
 * A table's change stream (CONTRACT §14): `GET /api/tables/{t}/changes/stream?after&filter` with
 * `Last-Event-ID`, and `POST /api/tables/{t}/changes/stream-url {filter?, expiresIn?}`, which
 * signs a URL of the stream for a client that cannot send X-API-Key (a browser's EventSource).
 */

const STREAM_PARAMS = ['after', 'filter'] as const;

export interface StreamQuery {
  /** The last sequence the client has (Last-Event-ID, else `after`); undefined: what commits from now on. */
  after: number | undefined;
  /** Keeps the changes whose row matches before or after the change; null keeps every change. */
  filter: RowFilter | null;
}

/**
 * The stream's query string and Last-Event-ID header: every problem at once, as one 400. The header
 * wins over `after` when both are sent (a browser's EventSource sends both when it reconnects to a
 * URL holding `after`).
 */
export function parseStreamQuery(query: Record<string, unknown>, lastEventId: string | string[] | undefined, table: FieldLookup): StreamQuery {
  const details: ErrorDetail[] = [];
  const params = readQuery(query, STREAM_PARAMS, details);
  const afterParam = params.after === undefined ? undefined : intParam('after', params.after, 0, Number.MAX_SAFE_INTEGER, 0, details);
  let after = afterParam;
  // An empty one is no id (an EventSource sends none then).
  if (lastEventId !== undefined && lastEventId !== '') {
    if (typeof lastEventId !== 'string') details.push({ path: 'Last-Event-ID', message: 'must be given once' });
    else after = intParam('Last-Event-ID', lastEventId.trim(), 0, Number.MAX_SAFE_INTEGER, 0, details);
  }
  const raw = jsonParam('filter', params.filter, details);
  const filter = raw === undefined ? null : parseRowFilter(raw, table, details);
  if (details.length > 0) throw invalid(details, 'Invalid change stream query');
  return { after, filter };
}

/** Seconds a signed stream URL admits new connections for, by default and at most. */
export const STREAM_URL_SECONDS = { default: 3600, max: 86400 };

export interface StreamUrlRequest {
  /** The filter the URL's streams apply, as JSON text (signed into the URL); undefined: none. */
  filterText: string | undefined;
  expiresIn: number;
}

/** POST /api/tables/{t}/changes/stream-url `{filter?, expiresIn?}`: `filter` as a JSON object (the rows grammar). */
export function parseStreamUrlRequest(body: unknown, table: FieldLookup): StreamUrlRequest {
  if (body === undefined || body === null) return { filterText: undefined, expiresIn: STREAM_URL_SECONDS.default };
  if (!isObject(body)) throw badRequest('The body must be a JSON object {filter?, expiresIn?}');
  const details: ErrorDetail[] = [];
  for (const key of Object.keys(body)) {
    if (key !== 'filter' && key !== 'expiresIn') details.push({ path: key, message: 'is not a known property; use filter, expiresIn' });
  }
  const { filter, expiresIn = STREAM_URL_SECONDS.default } = body;
  if (filter !== undefined && filter !== null) parseRowFilter(filter, table, details);
  if (typeof expiresIn !== 'number' || !Number.isInteger(expiresIn) || expiresIn < 1 || expiresIn > STREAM_URL_SECONDS.max) {
    details.push({ path: 'expiresIn', message: `must be an integer from 1 to ${STREAM_URL_SECONDS.max} (seconds)` });
  }
  if (details.length > 0) throw invalid(details, 'Invalid stream URL request');
  return { filterText: filter === undefined || filter === null ? undefined : JSON.stringify(filter), expiresIn: expiresIn as number };
}
