import { STATUS_CODES } from 'node:http';

export interface ErrorDetail {
  path: string;
  message: string;
}

/**
 * The one error path: everything that answers with an error throws this (or is turned into it
 * by the error handler), and it renders as {statusCode, error, message, details?, ...extra}.
 */
export class HttpError extends Error {
  readonly statusCode: number;
  readonly details?: ErrorDetail[];
  readonly extra?: Record<string, unknown>;

  constructor(statusCode: number, message: string, details?: ErrorDetail[], extra?: Record<string, unknown>) {
    super(message);
    this.statusCode = statusCode;
    this.details = details && details.length > 0 ? details : undefined;
    this.extra = extra;
  }

  toBody(): Record<string, unknown> {
    return {
      statusCode: this.statusCode,
      error: statusName(this.statusCode),
      message: this.message,
      ...(this.details ? { details: this.details } : {}),
      ...this.extra,
    };
  }
}

export function statusName(code: number): string {
  return STATUS_CODES[code] ?? 'Error';
}

export const badRequest = (message: string, details?: ErrorDetail[]) => new HttpError(400, message, details);
export const notFound = (message: string) => new HttpError(404, message);
export const conflict = (message: string) => new HttpError(409, message);

/** A 400 that lists every detail, with a message that names them all. */
export function invalid(details: ErrorDetail[], prefix = 'Invalid request'): HttpError {
  const summary = details.map((d) => (d.path ? `${d.path}: ${d.message}` : d.message)).join('; ');
  return new HttpError(400, `${prefix}: ${summary}`, details);
}
