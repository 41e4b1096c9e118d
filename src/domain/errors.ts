import { STATUS_CODES } from 'node:http';

export interface ErrorDetail {
  path: string;
  message: string;
}

/**
 * Every kind of error the service answers with, as a stable machine-readable code, and its status.
 * The code never reaches the body (CONTRACT §3 fixes its fields): it is logged with the error, and
 * code and tests tell errors apart by it instead of by their message.
 */
export const ERROR_CODES = {
  /** The body, query or path is malformed or fails validation. */
  invalid_request: 400,
  /** A table has reached the database's limit of columns (PostgreSQL counts dropped ones too). */
  too_many_columns: 400,
  /** No X-API-Key, or one that is unknown, revoked or expired. */
  unauthorized: 401,
  /** A signed file URL that was altered, or has expired. */
  bad_signature: 403,
  /** No such route, table, row or item. */
  not_found: 404,
  /** A row with that id exists. */
  row_exists: 409,
  /** Another item holds that unique value (a name, an email, a table code). */
  unique_value: 409,
  /** The item is still needed: the owner member, a member that owns API keys. */
  in_use: 409,
  /** The table's fields changed while the request ran: sending it again will do. */
  schema_changed: 409,
  /** An upload to a file that is attached to a row: its bytes cannot change. */
  file_attached: 409,
  /** A retry of a flow delivery that is not failed, or whose flow is disabled. */
  delivery_not_retryable: 409,
  /** A changes feed cursor older than the changes kept: what came after it is gone. */
  changes_gone: 410,
  /** A request body that stopped arriving (ROWHOUSE_BODY_TIMEOUT_SECONDS), or headers that took too long. */
  request_timeout: 408,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  /** The request line and headers are larger than Node's limit (16 KiB): answered before any route. */
  header_fields_too_large: 431,
  /** A fault of the service: logged with the request id, never explained to the client. */
  internal: 500,
  /** The database cannot be reached. */
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

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

/**
 * The one error path: everything that answers with an error throws this (or is turned into it
 * by the error handler), and it renders as {statusCode, error, message, details?, ...extra}.
 */
export class ServiceError extends Error {
  readonly statusCode: number;
  readonly code: ErrorCode;
  readonly details?: ErrorDetail[];
  readonly extra?: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, details?: ErrorDetail[], extra?: Record<string, unknown>) {
    super(message);
    this.code = code;
    this.statusCode = ERROR_CODES[code];
    this.details = details && details.length > 0 ? details : undefined;
    this.extra = extra;
  }

  /** The same error, its message prefixed with where in a request of several items it happened. */
  at(where: string, extra?: Record<string, unknown>): ServiceError {
    return new ServiceError(this.code, `${where}: ${this.message}`, this.details, extra ? { ...this.extra, ...extra } : this.extra);
  }

  toBody(): ErrorBody {
    return {
      ...errorBody(this.statusCode, this.message),
      ...(this.details ? { details: this.details } : {}),
      ...this.extra,
    };
  }
}

/** The one error format (CONTRACT §3); `extra` adds what a route documents (a batch's index). */
export interface ErrorBody {
  statusCode: number;
  error: string;
  message: string;
  details?: ErrorDetail[];
  [extra: string]: unknown;
}

export function errorBody(statusCode: number, message: string): ErrorBody {
  return { statusCode, error: statusName(statusCode), message };
}

export function statusName(code: number): string {
  return STATUS_CODES[code] ?? 'Error';
}

export const badRequest = (message: string, details?: ErrorDetail[]) => new ServiceError('invalid_request', message, details);
export const notFound = (message: string) => new ServiceError('not_found', message);

/** A 400 that lists every detail, with a message that names them all. */
export function invalid(details: ErrorDetail[], prefix = 'Invalid request'): ServiceError {
  const summary = details.map((d) => (d.path ? `${d.path}: ${d.message}` : d.message)).join('; ');
  return new ServiceError('invalid_request', `${prefix}: ${summary}`, details);
}
