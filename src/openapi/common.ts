import { STATUS_CODES } from 'node:http';

/** What both OpenAPI documents (the service's and each table's) are built from. */

export type Schema = Record<string, unknown>;

export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

export const jsonBody = (schema: Schema): Schema => ({ required: true, content: { 'application/json': { schema } } });

export const jsonResponse = (description: string, schema: Schema): Schema => ({ description, content: { 'application/json': { schema } } });

/** The one error format (CONTRACT §3), for each status an operation may answer with. */
export function errorResponses(...statuses: number[]): Record<string, Schema> {
  const out: Record<string, Schema> = {};
  // A route that takes a key may refuse it for a scope or table it lacks, or for its rate limit (CONTRACT §12).
  const keyed = statuses.includes(401) ? [403, 429] : [];
  for (const status of [...statuses, ...keyed, 500, 503].sort((a, b) => a - b)) out[status] = jsonResponse(STATUS_CODES[status] ?? 'Error', ref('Error'));
  return out;
}

const WRITE_METHODS = ['post', 'put', 'patch', 'delete'];

/**
 * Every write under /api may carry an Idempotency-Key (CONTRACT §12): the header on each, and the
 * answers it adds (422: the key was used for another request; 409: its first request still runs).
 */
export function idempotentWrites<T extends Record<string, Schema>>(paths: T): T {
  const header = {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description: 'Sent again with the same request, answers what the first answered (Idempotent-Replayed: true) and writes nothing more. 1–255 printable ASCII characters, per API key.',
    schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7E]+$' },
  };
  for (const [path, item] of Object.entries(paths)) {
    if (!path.startsWith('/api/')) continue;
    for (const method of WRITE_METHODS) {
      const op = item[method] as { parameters?: Schema[]; responses: Record<string, Schema> } | undefined;
      if (!op || op.parameters?.some((p) => p.name === header.name)) continue;
      op.parameters = [...(op.parameters ?? []), header];
      op.responses = { ...op.responses, ...errorResponsesOnly(409, 422) };
    }
  }
  return paths;
}

function errorResponsesOnly(...statuses: number[]): Record<string, Schema> {
  return Object.fromEntries(statuses.map((status) => [status, jsonResponse(STATUS_CODES[status] ?? 'Error', ref('Error'))]));
}

/** The API key scheme, required everywhere it is not lifted, and the Error schema. */
export function securityParts() {
  return {
    security: [{ apiKey: [] }],
    components: {
      securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } },
      schemas: {
        Error: {
          type: 'object',
          properties: {
            statusCode: { type: 'integer', minimum: 400, maximum: 599 },
            error: { type: 'string' },
            message: { type: 'string' },
            details: { type: 'array', items: { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' } }, required: ['path', 'message'], additionalProperties: false } },
            index: { type: 'integer', minimum: 0, description: 'rows-batch: the operation that failed.' },
          },
          required: ['statusCode', 'error', 'message'],
          additionalProperties: false,
        } satisfies Schema,
      },
    },
  };
}
