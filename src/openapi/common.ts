import { STATUS_CODES } from 'node:http';

/** What both OpenAPI documents (the service's and each table's) are built from. */

export type Schema = Record<string, unknown>;

export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

export const jsonBody = (schema: Schema): Schema => ({ required: true, content: { 'application/json': { schema } } });

export const jsonResponse = (description: string, schema: Schema): Schema => ({ description, content: { 'application/json': { schema } } });

/** The one error format (CONTRACT §3), for each status an operation may answer with. */
export function errorResponses(...statuses: number[]): Record<string, Schema> {
  const out: Record<string, Schema> = {};
  for (const status of [...statuses, 500, 503]) out[status] = jsonResponse(STATUS_CODES[status] ?? 'Error', ref('Error'));
  return out;
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
