import { type ErrorDetail, invalid } from '../errors.ts';
import { intParam, readQuery } from '../query-string.ts';

/** GET /api/tables/{t}/changes?after&limit&wait: where the feed starts, how much, how long to wait for it. */

const FEED_PARAMS = ['after', 'limit', 'wait'] as const;

export interface FeedQuery {
  /** The consumer's cursor: the last sequence it has; undefined starts at the oldest kept. */
  after: number | undefined;
  limit: number;
  /** Seconds to wait for a change when there is none yet (a long poll); 0 answers at once. */
  wait: number;
}

export function feedQuery(query: Record<string, unknown>): FeedQuery {
  const details: ErrorDetail[] = [];
  const params = readQuery(query, FEED_PARAMS, details);
  const after = params.after === undefined ? undefined : intParam('after', params.after, 0, Number.MAX_SAFE_INTEGER, -1, details);
  const limit = intParam('limit', params.limit, 1, 1000, 100, details);
  const wait = intParam('wait', params.wait, 1, 30, 0, details);
  if (details.length > 0) throw invalid(details, 'Invalid changes query');
  return { after, limit, wait };
}
