export interface ErrorDetail {
  path: string;
  message: string;
}

/**
 * Every kind of error the service answers with, as a stable machine-readable code. The code never
 * reaches the body (CONTRACT §3 fixes its fields): it is logged with the error, and code and tests
 * tell errors apart by it instead of by their message. Only the http layer maps a code to its
 * status (src/http/error-status.ts).
 */
export type ErrorCode =
  /** The body, query or path is malformed or fails validation. */
  | 'invalid_request'
  /** A table has reached the database's limit of columns (PostgreSQL counts dropped ones too). */
  | 'too_many_columns'
  /** No X-API-Key, or one that is unknown, revoked or expired. */
  | 'unauthorized'
  /** A signed file URL that was altered, or has expired. */
  | 'bad_signature'
  /** The API key lacks the scope or table the request needs (CONTRACT §12). */
  | 'forbidden'
  /** The API key has used up its rate limit for now (CONTRACT §12). */
  | 'rate_limited'
  /** An Idempotency-Key used before with another method, path or body (CONTRACT §12). */
  | 'idempotency_mismatch'
  /** An Idempotency-Key whose first request is still running (CONTRACT §12). */
  | 'idempotency_in_flight'
  /** No such route, table, row or item. */
  | 'not_found'
  /** A row with that id exists. */
  | 'row_exists'
  /** Another item holds that unique value (a name, an email, a table code). */
  | 'unique_value'
  /** The item is still needed: the owner member, a member that owns API keys. */
  | 'in_use'
  /** The table's fields changed while the request ran: sending it again will do. */
  | 'schema_changed'
  /** An upload to a file that is attached to a row: its bytes cannot change. */
  | 'file_attached'
  /** A retry of a flow delivery that is not failed, or whose flow is disabled. */
  | 'delivery_not_retryable'
  /** A changes feed cursor older than the changes kept: what came after it is gone. */
  | 'changes_gone'
  /** A request body that stopped arriving (ROWHOUSE_BODY_TIMEOUT_SECONDS), or headers that took too long. */
  | 'request_timeout'
  | 'payload_too_large'
  | 'uri_too_long'
  | 'unsupported_media_type'
  /** The request line and headers are larger than Node's limit (16 KiB): answered before any route. */
  | 'header_fields_too_large'
  /** A fault of the service: logged with the request id, never explained to the client. */
  | 'internal'
  /** The database cannot be reached. */
  | 'unavailable';

/**
 * Where in a request an error happened, from the body's top: `['data', 3]` is the bulk item at
 * index 3, `['operations', 2]` a batch's operation 2, `[2]` the third item of a resource array.
 */
export type ErrorPath = readonly (string | number)[];

/** The path of an error about the request as a whole (shared: most errors have no path). */
const WHOLE_REQUEST: ErrorPath = Object.freeze([]);

/**
 * The one error path: everything that answers with an error throws this (or is turned into it by
 * the error handler). It is data, not an answer: a code, the message, where in the request it
 * happened (`path`), the details of a validation and what a route documents besides (`extra`, a
 * batch's index). The http layer renders it (src/http/error-body.ts): the status from the code,
 * and the message prefixed with the path (`data[3]: …`).
 */
export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly path: ErrorPath;
  readonly details?: ErrorDetail[];
  readonly extra?: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, details?: ErrorDetail[], extra?: Record<string, unknown>, path: ErrorPath = WHOLE_REQUEST) {
    super(message);
    this.code = code;
    this.path = path;
    this.details = details && details.length > 0 ? details : undefined;
    this.extra = extra;
  }

  /**
   * The same error, happened within the part of the request at `path` (an item of a bulk, an
   * operation of a batch): the path grows at its start, the message stays as it is.
   */
  within(path: ErrorPath, extra?: Record<string, unknown>): ServiceError {
    return new ServiceError(this.code, this.message, this.details, extra ? { ...this.extra, ...extra } : this.extra, [...path, ...this.path]);
  }
}

export const badRequest = (message: string, details?: ErrorDetail[]) => new ServiceError('invalid_request', message, details);
export const notFound = (message: string) => new ServiceError('not_found', message);

/** A 400 that lists every detail, with a message that names them all. */
export function invalid(details: ErrorDetail[], prefix = 'Invalid request'): ServiceError {
  const summary = details.map((d) => (d.path ? `${d.path}: ${d.message}` : d.message)).join('; ');
  return new ServiceError('invalid_request', `${prefix}: ${summary}`, details);
}
