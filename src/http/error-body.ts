import { STATUS_CODES } from 'node:http';
import type { ErrorDetail, ErrorPath, ServiceError } from '../domain/errors.ts';
import { statusOf } from './error-status.ts';

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

/**
 * A ServiceError as its body: {statusCode, error, message, details?, ...extra}, the message
 * prefixed with where in the request it happened (`data[3]: …`, `operations[2]: …`).
 */
export function serviceErrorBody(err: ServiceError): ErrorBody {
  const message = err.path.length > 0 ? `${pathText(err.path)}: ${err.message}` : err.message;
  return {
    ...errorBody(statusOf(err.code), message),
    ...(err.details ? { details: err.details } : {}),
    ...err.extra,
  };
}

/** A path as the details' paths write it: `data[3].values.price`, `[2]`. */
export function pathText(path: ErrorPath): string {
  let text = '';
  for (const step of path) text += typeof step === 'number' ? `[${step}]` : text === '' ? step : `.${step}`;
  return text;
}
