import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The service's own upload and download URLs (local storage; S3 hands out the bucket's presigned
 * ones): `/files/{tableId}/{rowId}/{fileId}?[name=<name>&]expires=<unix seconds>&signature=<HMAC>`
 * (the name, for downloads only, in the query: it may be longer than a path segment may).
 * The signature is an HMAC-SHA256 with the instance secret over the purpose, the ids, the name and
 * the expiry, so no part can be changed, and an upload URL cannot serve as a download URL.
 */

export type UrlPurpose = 'upload' | 'download';

export interface FileUrlTarget {
  tableId: string;
  rowId: string;
  fileId: string;
  /** Downloads only: the name the bytes are offered under. */
  name?: string;
}

/** How long every URL is valid (the specification's "1 hour"). */
export const URL_LIFETIME_SECONDS = 3600;

/**
 * The signature of a signed URL: an HMAC-SHA256 with the instance secret over what the URL grants
 * (its purpose first, so a URL for one purpose serves no other) and its expiry. Also signs the
 * change streams' URLs (http/change-stream-routes.ts).
 */
export function urlSignature(secret: string, parts: readonly string[], expires: number): string {
  return createHmac('sha256', secret).update([...parts, String(expires)].join('\n')).digest('base64url');
}

/** Why a signed URL's `expires` and `signature` do not admit it ('expired' or 'invalid'), or null when they do. */
export function checkUrlSignature(secret: string, parts: readonly string[], query: Record<string, unknown>, nowSeconds: number): 'invalid' | 'expired' | null {
  const { expires, signature: given } = query;
  if (typeof expires !== 'string' || !/^\d{1,12}$/.test(expires) || typeof given !== 'string') return 'invalid';
  const expected = Buffer.from(urlSignature(secret, parts, Number(expires)));
  const actual = Buffer.from(given);
  if (actual.length !== expected.length || !timingSafeEqual(actual, expected)) return 'invalid';
  return Number(expires) < nowSeconds ? 'expired' : null;
}

const fileParts = (purpose: UrlPurpose, t: FileUrlTarget) => [purpose, t.tableId, t.rowId, t.fileId, t.name ?? ''];

function signature(secret: string, purpose: UrlPurpose, t: FileUrlTarget, expires: number): string {
  return urlSignature(secret, fileParts(purpose, t), expires);
}

/** The path and query of a signed URL valid until `expires` (unix seconds). */
export function signedPath(secret: string, purpose: UrlPurpose, t: FileUrlTarget, expires: number): string {
  const path = [t.tableId, t.rowId, t.fileId].map(encodeURIComponent).join('/');
  const name = purpose === 'download' ? `name=${encodeURIComponent(t.name ?? '')}&` : '';
  return `/files/${path}?${name}expires=${expires}&signature=${signature(secret, purpose, t, expires)}`;
}

/** Why a URL's query does not admit the request ('expired' or 'invalid'), or null when it does. */
export function checkSignature(secret: string, purpose: UrlPurpose, t: FileUrlTarget, query: Record<string, unknown>, nowSeconds: number): 'invalid' | 'expired' | null {
  return checkUrlSignature(secret, fileParts(purpose, t), query, nowSeconds);
}
