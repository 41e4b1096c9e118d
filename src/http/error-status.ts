import type { ErrorCode } from '../domain/errors.ts';

/** The status each error code answers with: the one place codes become HTTP statuses. */
const STATUS_OF_CODE: Record<ErrorCode, number> = {
  invalid_request: 400,
  too_many_columns: 400,
  unauthorized: 401,
  bad_signature: 403,
  forbidden: 403,
  rate_limited: 429,
  idempotency_mismatch: 422,
  idempotency_in_flight: 409,
  not_found: 404,
  row_exists: 409,
  unique_value: 409,
  in_use: 409,
  schema_changed: 409,
  file_attached: 409,
  delivery_not_retryable: 409,
  changes_gone: 410,
  request_timeout: 408,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  header_fields_too_large: 431,
  internal: 500,
  unavailable: 503,
};

export function statusOf(code: ErrorCode): number {
  return STATUS_OF_CODE[code];
}

const CODE_OF_STATUS: Partial<Record<number, ErrorCode>> = {
  401: 'unauthorized',
  404: 'not_found',
  408: 'request_timeout',
  413: 'payload_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
  431: 'header_fields_too_large',
  503: 'unavailable',
};

/** The code of an error that carries only a status (Fastify's own: a body too large, not JSON, a bad URL). */
export function codeOfStatus(status: number): ErrorCode {
  return CODE_OF_STATUS[status] ?? (status >= 500 ? 'internal' : 'invalid_request');
}
