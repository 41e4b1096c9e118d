import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { badRequest } from './errors.ts';

/**
 * Keyset cursors: opaque, signed, carrying the last row's sort values and bound to the table,
 * filter and sort they were made for (CONTRACT §6).
 */

/** A sort key's value as a cursor carries it: the column's value as the database returned it. */
export type CursorValue = string | number | boolean | null;

/**
 * What a cursor is bound to: a digest of the table id, the canonical filter and sort, and the
 * sort keys' columns and types, so a cursor outlives no change of a field it carries values of.
 */
export function cursorBinding(tableId: string, filter: unknown, sort: unknown, keys: readonly string[]): string {
  return createHash('sha256').update(JSON.stringify([tableId, filter ?? null, sort ?? null, keys])).digest('base64url').slice(0, 16);
}

function mac(secret: string, body: string): Buffer {
  return createHmac('sha256', secret).update(body).digest().subarray(0, 16);
}

export function signCursor(secret: string, binding: string, values: CursorValue[]): string {
  const body = Buffer.from(JSON.stringify({ b: binding, v: values })).toString('base64url');
  return `${body}.${mac(secret, body).toString('base64url')}`;
}

const isCursorValue = (v: unknown): v is CursorValue =>
  v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));

/** The sort values a cursor carries; a 400 when it is altered or was made for another query (`boundTo` names its parameters). */
export function readCursor(secret: string, token: string, binding: string, length: number, boundTo = 'filter or sort'): CursorValue[] {
  const [body, signature, ...rest] = token.split('.');
  // Compared as text: decoding would ignore the spare bits of the last character, accepting altered cursors.
  const given = Buffer.from(signature ?? '');
  const expected = Buffer.from(mac(secret, body ?? '').toString('base64url'));
  if (rest.length > 0 || !body || given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw badRequest('cursor is not valid: use the nextUrl of the previous page as it is');
  }
  const payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as { b: string; v: unknown[] };
  if (payload.b !== binding) {
    throw badRequest(`cursor belongs to another ${boundTo}: follow nextUrl, or start again without a cursor`);
  }
  if (!Array.isArray(payload.v) || payload.v.length !== length || !payload.v.every(isCursorValue)) {
    throw badRequest('cursor is not valid: use the nextUrl of the previous page as it is');
  }
  return payload.v;
}
