import assert from 'node:assert/strict';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { Reply } from '../support/harness.ts';

/** What the OpenAPI tests share: a table of every field type, and checks of real answers against a document. */

export const EVERY_TYPE = [
  { code: 'title', type: 'text', required: true, options: { maxLength: 100 } },
  { code: 'amount', type: 'number', options: { min: 0, max: 1e9, indexed: true } },
  { code: 'paid', type: 'boolean' },
  { code: 'at', type: 'dateTime' },
  { code: 'day', type: 'date' },
  { code: 'clock', type: 'time' },
  { code: 'month', type: 'yearMonth' },
  { code: 'status', type: 'select', options: { choices: ['open', 'paid', 'void'] } },
  { code: 'meta', type: 'record' },
  { code: 'tags', type: 'list' },
  { code: 'scan', type: 'file' },
];

export type Operation = {
  operationId: string;
  security?: unknown[];
  requestBody?: { content: Record<string, { schema?: unknown }> };
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
};
export type Doc = { openapi: string; servers: unknown; paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> }; [k: string]: unknown };

/** A JSON pointer into the document, its parts escaped. */
export const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/** An ajv (JSON Schema 2020-12, with formats) holding the document as `doc`, and the check of an operation's answers against it. */
export function documentChecks(doc: Doc) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addSchema({ ...doc, $id: 'doc' });

  /** Asserts that what was sent is what the document takes, and that the answer matches what it says the operation answers with that status. */
  function conforms(path: string, method: string, reply: Reply, sent?: unknown): void {
    const op = doc.paths[path]?.[method];
    assert.ok(op, `no ${method} ${path} in the document`);
    if (sent !== undefined) {
      const validate = ajv.compile({ $ref: `doc#/${pointer('paths', path, method, 'requestBody', 'content', 'application/json', 'schema')}` });
      assert.ok(validate(sent), `${method} ${path}: the document refuses the body sent: ${ajv.errorsText(validate.errors)}`);
    }
    const response = op.responses[String(reply.status)];
    assert.ok(response, `${method} ${path} answered ${reply.status}, which the document does not list: ${reply.text.slice(0, 200)}`);
    if (!response.content) return assert.equal(reply.text, '');
    if (!response.content['application/json']) {
      const type = String(reply.headers['content-type']).split(';')[0];
      return assert.ok(type in response.content || '*/*' in response.content, `${method} ${path}: ${type} is not among ${Object.keys(response.content)}`);
    }
    const validate = ajv.compile({ $ref: `doc#/${pointer('paths', path, method, 'responses', String(reply.status), 'content', 'application/json', 'schema')}` });
    assert.ok(validate(reply.body), `${method} ${path} → ${reply.status}: ${ajv.errorsText(validate.errors)}\n${reply.text.slice(0, 500)}`);
  }
  return { ajv, conforms };
}
