import { ROW_ID } from '../codes.ts';
import { badRequest } from '../errors.ts';
import { isObject } from '../json.ts';

/** At most this many upload URLs per call (the specification's limits). */
const MAX_UPLOAD_URLS = 50;

/** POST /rows/{rowId}/file-upload-url: `{count}` upload URLs for the row (CONTRACT §8). */
export interface UploadUrlRequest {
  rowId: string;
  count: number;
}

export function parseUploadUrlRequest(rowId: string, body: unknown): UploadUrlRequest {
  if (!ROW_ID.test(rowId)) throw badRequest(`rowId must be a row id: 1 to 128 of A-Z a-z 0-9 _ . : @ -, starting with a letter or digit`);
  if (!isObject(body)) throw badRequest('The body must be a JSON object {count}');
  const unknown = Object.keys(body).find((k) => k !== 'count');
  if (unknown !== undefined) throw badRequest(`${unknown} is not a known property; use count`, [{ path: unknown, message: 'is not a known property' }]);
  const { count } = body;
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > MAX_UPLOAD_URLS) {
    throw badRequest(`count must be an integer from 1 to ${MAX_UPLOAD_URLS}`, [{ path: 'count', message: `must be an integer from 1 to ${MAX_UPLOAD_URLS}` }]);
  }
  return { rowId, count };
}
