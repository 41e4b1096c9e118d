import type { FieldDef, FieldType } from '../domain/field-types/field-type.ts';
import { fieldType } from '../domain/field-types/registry.ts';
import { SYSTEM_ORDER } from '../domain/row-columns.ts';
import { type Schema, errorResponses, idempotentWrites, jsonBody, jsonResponse, ref, securityParts } from './common.ts';
import type { TableDef } from '../domain/table.ts';
import { aggregatePath, aggregateSchemas } from './aggregate-document.ts';
import { streamPaths } from './stream-paths.ts';
import { isLinkField, linkConditionSchema } from '../domain/field-types/link.ts';
import { MAX_EXPAND } from '../domain/requests/expand.ts';

/**
 * The OpenAPI 3.1 document of one table's row API (CONTRACT §10): every rows route at its concrete
 * path, with `values` schemas that each field's type module gives (valueSchema, writeSchema), so
 * the document follows the table's fields as they are now.
 */

const BULK_MAX = 1000;
const UPLOAD_URLS_MAX = 50;

/** The filter operators of a field (ANDed), and the schema of each one's operand. */
function conditionSchema(field: FieldDef, type: FieldType = fieldType(field.type)): Schema {
  if (isLinkField(field)) return linkConditionSchema(field);
  // A filter's operand is written as a value is (a date-time's seconds are optional).
  const as = fieldType(type.comparisonType ?? type.name);
  const compared = as.writeSchema ? as.writeSchema({ ...field, options: {} }) : as.valueSchema({ ...field, options: {} });
  const properties: Record<string, Schema> = { _isNull: { type: 'boolean' } };
  for (const op of type.filterOps) properties[op] = op === '_contains' && type.name === 'list' ? {} : compared;
  return { type: 'object', properties, additionalProperties: false, minProperties: 1 };
}

/** A field's value in a read row (null where the field is not required). */
function readValue(field: FieldDef): Schema {
  const schema = fieldType(field.type).valueSchema(field);
  return field.required ? schema : { oneOf: [schema, { type: 'null' }] };
}

/** A field's value as written; null only where the field is not required. */
function writeValue(field: FieldDef): Schema {
  const type = fieldType(field.type);
  const schema = type.writeSchema ? type.writeSchema(field) : type.valueSchema(field);
  return field.required ? schema : { oneOf: [schema, { type: 'null' }] };
}

/** The components of a table's document: its rows, values, filter and sort. */
function tableSchemas(table: TableDef): Record<string, Schema> {
  const system = Object.fromEntries(SYSTEM_ORDER.map((c) => [c.key, { type: 'string', ...(c.type.name === 'dateTime' ? { format: 'date-time' } : {}) }]));
  const sortable = [...SYSTEM_ORDER.map((c) => c.key), ...table.fields.filter((f) => fieldType(f.type).sortable).map((f) => f.code)];
  const byCode = (value: (f: FieldDef) => Schema) => Object.fromEntries(table.fields.map((f) => [f.code, value(f)]));
  const required = table.fields.filter((f) => f.required).map((f) => f.code);
  return {
    Row: {
      type: 'object',
      description: 'A row record: the system columns and `values`, keyed by field code.',
      properties: { ...system, values: ref('Values') },
      required: [...SYSTEM_ORDER.map((c) => c.key), 'values'],
      additionalProperties: false,
    },
    Values: { type: 'object', properties: byCode(readValue), required: table.fields.map((f) => f.code), additionalProperties: false },
    CreateValues: {
      type: 'object',
      description: 'Values of a new row. Fields left out are null; required fields must be given.',
      properties: byCode(writeValue),
      ...(required.length > 0 ? { required } : {}),
      additionalProperties: false,
    },
    UpdateValues: { type: 'object', description: 'The fields to change; others keep their values.', properties: byCode(writeValue), additionalProperties: false },
    RowId: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$', description: 'A client-chosen row id; a UUID when the service assigns it.' },
    CreateRow: {
      type: 'object',
      properties: {
        id: ref('RowId'),
        values: ref('CreateValues'),
        options: { type: 'object', properties: { upsert: { type: 'boolean', description: 'Update the row when the id exists (a partial update).' } }, additionalProperties: false },
      },
      required: ['values'],
      additionalProperties: false,
    },
    UpdateRow: { type: 'object', properties: { values: ref('UpdateValues') }, required: ['values'], additionalProperties: false },
    Filter: {
      type: 'object',
      description: 'Keys of one object are ANDed. See the API reference, "Listing rows".',
      properties: {
        values: {
          type: 'object',
          properties: byCode(conditionSchema),
          additionalProperties: false,
        },
        ...Object.fromEntries(SYSTEM_ORDER.map((c) => [c.key, conditionSchema(c.field, c.type)])),
        _and: { type: 'array', items: ref('Filter') },
        _or: { type: 'array', items: ref('Filter') },
        _not: ref('Filter'),
      },
      additionalProperties: false,
    },
    Sort: {
      type: 'array',
      description: 'Sort keys in priority order; `id asc` is always the final tiebreaker.',
      items: {
        type: 'object',
        properties: Object.fromEntries(
          sortable.map((key) => [
            key,
            {
              type: 'object',
              properties: { direction: { enum: ['asc', 'desc'] }, nulls: { enum: ['nullsFirst', 'nullsLast'] } },
              required: ['direction', 'nulls'],
              additionalProperties: false,
            },
          ]),
        ),
        minProperties: 1,
        maxProperties: 1,
        additionalProperties: false,
      },
    },
    RowList: {
      type: 'object',
      properties: { data: { type: 'array', items: ref('Row') }, nextUrl: { type: ['string', 'null'], format: 'uri' } },
      required: ['data', 'nextUrl'],
      additionalProperties: false,
    },
    ImportResult: {
      type: 'object',
      properties: {
        created: { type: 'integer', minimum: 0 },
        updated: { type: 'integer', minimum: 0 },
        failed: { type: 'integer', minimum: 0 },
        problems: {
          type: 'array',
          maxItems: 100,
          items: { type: 'object', properties: { line: { type: 'integer', minimum: 1 }, column: { type: 'string' }, message: { type: 'string' } }, required: ['line', 'column', 'message'], additionalProperties: false },
        },
        warnings: { type: 'array', items: { type: 'string' } },
      },
      required: ['created', 'updated', 'failed', 'problems', 'warnings'],
      additionalProperties: false,
    },
    Change: {
      type: 'object',
      properties: {
        sequence: { type: 'integer', minimum: 1 },
        type: { enum: ['create', 'update', 'delete'] },
        tableId: { type: 'string' },
        rowId: ref('RowId'),
        row: { oneOf: [ref('ChangedRow'), { type: 'null' }], description: 'The row after the change; null after a delete.' },
        changedFields: { type: ['array', 'null'], items: { type: 'string' }, description: 'The fields an update wrote; null otherwise.' },
        occurredAt: { type: 'string', format: 'date-time' },
        memberId: { type: ['string', 'null'] },
      },
      required: ['sequence', 'type', 'tableId', 'rowId', 'row', 'changedFields', 'occurredAt', 'memberId'],
      additionalProperties: false,
    },
    ChangedRow: {
      type: 'object',
      description: 'A row record as it was after a change, in the fields of that time (file values without a download URL).',
      properties: { ...system, values: { type: 'object' } },
      required: [...SYSTEM_ORDER.map((c) => c.key), 'values'],
    },
    ChangePage: {
      type: 'object',
      properties: { data: { type: 'array', items: ref('Change') }, nextCursor: { type: 'integer', minimum: 0 } },
      required: ['data', 'nextCursor'],
      additionalProperties: false,
    },
    RowsData: { type: 'object', properties: { data: { type: 'array', items: ref('Row') } }, required: ['data'], additionalProperties: false },
    UploadUrls: {
      type: 'object',
      properties: {
        data: {
          type: 'array',
          items: {
            type: 'object',
            properties: { id: { type: 'string', format: 'uuid' }, url: { type: 'string', format: 'uri', description: 'PUT the bytes here, with a Content-Type, within 1 hour.' } },
            required: ['id', 'url'],
            additionalProperties: false,
          },
        },
      },
      required: ['data'],
      additionalProperties: false,
    },
  };
}

/** A query parameter holding JSON text, its structure described by `schema`. */
export const jsonParam = (name: string, description: string, schema: Schema) => ({
  name,
  in: 'query',
  required: false,
  description: `${description} JSON text (URL-encoded).`,
  schema: { type: 'string', contentMediaType: 'application/json', contentSchema: schema },
});

const rowIdParam = { name: 'rowId', in: 'path', required: true, schema: ref('RowId') };

/** The OpenAPI document of a table's row API, served at `publicUrl`. */
export function tableDocument(table: TableDef, publicUrl: string): Schema {
  const t = `/api/tables/${table.id}`;
  const label = table.code ?? table.id;
  const filter = jsonParam('filter', 'Which rows.', ref('Filter'));
  const sort = jsonParam('sort', 'Their order.', ref('Sort'));
  const tag = [label];
  const streams = streamPaths(t, tag, filter, rowIdParam);
  const linkCodes = table.fields.filter(isLinkField).map((f) => f.code);
  // `expand` where the table has link fields (CONTRACT §11).
  const expand: Schema[] =
    linkCodes.length === 0
      ? []
      : [
          {
            name: 'expand',
            in: 'query',
            required: false,
            description: `Link fields (comma-separated codes, at most ${MAX_EXPAND}) whose ids the answer replaces with the linked rows' records, one level: ${linkCodes.join(', ')}.`,
            schema: { type: 'string' },
          },
        ];
  return {
    openapi: '3.1.0',
    info: { title: `Rowhouse table ${label}: ${table.name}`, version: String(table.version), description: `The row API of table ${label} (id ${table.id}), version ${table.version} of its fields.` },
    servers: [{ url: publicUrl }],
    ...securityParts(),
    tags: [{ name: label }],
    paths: idempotentWrites({
      [`${t}/rows`]: {
        get: {
          operationId: 'listRows',
          tags: tag,
          summary: 'A page of rows',
          parameters: [
            { name: 'pageSize', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
            filter,
            sort,
            { name: 'cursor', in: 'query', required: false, description: 'From the previous page’s `nextUrl`; only with the same filter and sort.', schema: { type: 'string' } },
            ...expand,
          ],
          responses: { 200: { ...jsonResponse('The page; follow `nextUrl` until it is null.', ref('RowList')), headers: { Link: { description: '`<nextUrl>; rel="next"` while there is a next page.', schema: { type: 'string' } } } }, ...errorResponses(400, 401, 404) },
        },
        post: {
          operationId: 'createRow',
          tags: tag,
          summary: 'Create a row (or, with options.upsert, update the one with that id)',
          parameters: expand,
          requestBody: jsonBody(ref('CreateRow')),
          responses: { 201: jsonResponse('Created.', ref('Row')), 200: jsonResponse('Updated (upsert of an existing id).', ref('Row')), ...errorResponses(400, 401, 404, 409, 413, 415) },
        },
      },
      [`${t}/rows-aggregate`]: aggregatePath(tag, filter, jsonParam),
      [`${t}/rows/{rowId}`]: {
        parameters: [rowIdParam],
        get: { operationId: 'getRow', tags: tag, summary: 'One row', parameters: expand, responses: { 200: jsonResponse('The row.', ref('Row')), ...errorResponses(...(expand.length > 0 ? [400] : []), 401, 404) } },
        patch: {
          operationId: 'updateRow',
          tags: tag,
          summary: 'Update some fields of a row',
          parameters: expand,
          requestBody: jsonBody(ref('UpdateRow')),
          responses: { 200: jsonResponse('The row after the change.', ref('Row')), ...errorResponses(400, 401, 404, ...(linkCodes.length > 0 ? [409] : []), 413, 415) },
        },
        delete: { operationId: 'deleteRow', tags: tag, summary: 'Delete a row', responses: { 204: { description: 'Deleted.' }, ...errorResponses(401, 404, ...(table.incoming.length > 0 ? [409] : [])) } },
      },
      [`${t}/rows-bulk`]: {
        post: {
          operationId: 'createRows',
          tags: tag,
          summary: `Create up to ${BULK_MAX} rows, all or none`,
          parameters: expand,
          requestBody: jsonBody({
            type: 'object',
            properties: {
              data: { type: 'array', maxItems: BULK_MAX, items: { type: 'object', properties: { id: ref('RowId'), values: ref('CreateValues') }, required: ['values'], additionalProperties: false } },
              options: { type: 'object', properties: { upsert: { type: 'boolean' } }, additionalProperties: false },
            },
            required: ['data'],
            additionalProperties: false,
          }),
          responses: { 201: jsonResponse('The rows, in request order.', ref('RowsData')), 200: jsonResponse('The rows, in request order (some updated by upsert).', ref('RowsData')), ...errorResponses(400, 401, 404, 409, 413, 415) },
        },
        patch: {
          operationId: 'updateRows',
          tags: tag,
          summary: `Update up to ${BULK_MAX} rows, all or none`,
          parameters: expand,
          requestBody: jsonBody({
            type: 'object',
            properties: { data: { type: 'array', maxItems: BULK_MAX, items: { type: 'object', properties: { id: ref('RowId'), values: ref('UpdateValues') }, required: ['id', 'values'], additionalProperties: false } } },
            required: ['data'],
            additionalProperties: false,
          }),
          responses: { 200: jsonResponse('The rows after the change, in request order.', ref('RowsData')), ...errorResponses(400, 401, 404, 413, 415) },
        },
        delete: {
          operationId: 'deleteRows',
          tags: tag,
          summary: `Delete up to ${BULK_MAX} rows, all or none`,
          requestBody: jsonBody({ type: 'object', properties: { ids: { type: 'array', maxItems: BULK_MAX, items: ref('RowId') } }, required: ['ids'], additionalProperties: false }),
          responses: {
            200: jsonResponse('The ids deleted.', { type: 'object', properties: { data: { type: 'array', items: { type: 'object', properties: { id: ref('RowId') }, required: ['id'], additionalProperties: false } } }, required: ['data'], additionalProperties: false }),
            ...errorResponses(400, 401, 404, ...(table.incoming.length > 0 ? [409] : []), 413, 415),
          },
        },
      },
      [`${t}/rows-export`]: {
        get: {
          operationId: 'exportRows',
          tags: tag,
          summary: 'Every matching row as one streamed file',
          parameters: [
            { name: 'format', in: 'query', required: true, schema: { enum: ['csv', 'tsv', 'jsonl'] } },
            { name: 'encoding', in: 'query', required: true, schema: { enum: ['utf8', 'utf8Bom', 'shiftJis'] }, description: '`shiftJis` is Windows-31J (CP932); characters it cannot represent become `?`.' },
            { name: 'newline', in: 'query', required: true, schema: { enum: ['crlf', 'lf'] } },
            { name: 'header', in: 'query', required: false, schema: { enum: ['true', 'false'], default: 'true' }, description: 'Ignored for jsonl.' },
            { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 1000 } },
            filter,
            sort,
            ...expand.map((p) => ({ ...p, description: `${p.description as string} jsonl only.` })),
          ],
          responses: {
            200: {
              description: 'The file, streamed. Files in file fields appear as their name, type and size, without contents or URLs.',
              headers: { 'Content-Disposition': { schema: { type: 'string' } } },
              content: {
                'text/csv': { schema: { type: 'string' } },
                'text/tab-separated-values': { schema: { type: 'string' } },
                'application/x-ndjson': { schema: { type: 'string' } },
              },
            },
            ...errorResponses(400, 401, 404),
          },
        },
      },
      [`${t}/rows/{rowId}/file-upload-url`]: {
        parameters: [rowIdParam],
        post: {
          operationId: 'fileUploadUrls',
          tags: tag,
          summary: 'Upload URLs for files of a row (step 1 of attaching files)',
          description: 'PUT each file’s bytes to its URL with a Content-Type (no API key), then write `{id, name}` to a file field of this row.',
          requestBody: jsonBody({ type: 'object', properties: { count: { type: 'integer', minimum: 1, maximum: UPLOAD_URLS_MAX } }, required: ['count'], additionalProperties: false }),
          responses: { 200: jsonResponse(`Up to ${UPLOAD_URLS_MAX} file ids and upload URLs, valid 1 hour.`, ref('UploadUrls')), ...errorResponses(400, 401, 404, 413, 415) },
        },
      },
      [`${t}/rows-import`]: {
        post: {
          operationId: 'importRows',
          tags: tag,
          summary: 'Write the rows of a file in the shapes rows-export writes',
          description: 'The body is the file, streamed; its size is limited by ROWHOUSE_MAX_FILE_BYTES. A CSV/TSV header names columns by field code; `id` is optional; file fields are skipped with a warning.',
          parameters: [
            { name: 'format', in: 'query', required: true, schema: { enum: ['csv', 'tsv', 'jsonl'] } },
            { name: 'encoding', in: 'query', required: true, schema: { enum: ['utf8', 'utf8Bom', 'shiftJis'] }, description: 'A UTF-8 BOM is accepted, and means UTF-8, whatever this says.' },
            { name: 'mode', in: 'query', required: false, schema: { enum: ['create', 'upsert'], default: 'create' } },
            { name: 'atomic', in: 'query', required: false, schema: { enum: ['true', 'false'], default: 'true' }, description: 'true: every row, or none.' },
          ],
          requestBody: {
            required: true,
            content: Object.fromEntries(['text/csv', 'text/tab-separated-values', 'application/x-ndjson', 'application/octet-stream'].map((type) => [type, { schema: { type: 'string' } }])),
          },
          responses: { 200: jsonResponse('What the import did.', ref('ImportResult')), ...errorResponses(400, 401, 404, 413) },
        },
      },
      [`${t}/changes`]: {
        get: {
          operationId: 'listChanges',
          tags: tag,
          summary: 'The table’s committed changes after a cursor, in sequence order',
          parameters: [
            { name: 'after', in: 'query', required: false, description: 'The `nextCursor` of the previous answer; without it the feed starts at the oldest change kept.', schema: { type: 'integer', minimum: 0 } },
            { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
            { name: 'wait', in: 'query', required: false, description: 'Seconds to wait for a change when there is none yet (long poll).', schema: { type: 'integer', minimum: 1, maximum: 30 } },
          ],
          responses: { 200: jsonResponse('Changes, and the cursor to pass as `after` next.', ref('ChangePage')), ...errorResponses(400, 401, 404, 410) },
        },
      },
      ...streams.paths,
      '/api/rows-batch': {
        post: {
          operationId: 'batch',
          tags: tag,
          summary: `Up to ${BULK_MAX} creates, updates and deletes in one transaction`,
          description: `Operations on this table’s rows (the batch may name other tables too; this document describes the operations on ${label}).`,
          parameters: [
            {
              name: 'expand',
              in: 'query',
              required: false,
              description: `Link field codes (comma-separated, at most ${MAX_EXPAND}): each applies to the operations whose table has a link field of that code; a code no table of the batch has is a 400.`,
              schema: { type: 'string' },
            },
          ],
          requestBody: jsonBody({ type: 'object', properties: { operations: { type: 'array', maxItems: BULK_MAX, items: ref('BatchOperation') } }, required: ['operations'], additionalProperties: false }),
          responses: {
            200: jsonResponse('What each operation did, in order; `row` is null after a delete.', {
              type: 'object',
              properties: {
                data: {
                  type: 'array',
                  items: { type: 'object', properties: { type: { enum: ['create', 'update', 'delete'] }, row: { oneOf: [ref('Row'), { type: 'null' }] } }, required: ['type', 'row'], additionalProperties: false },
                },
              },
              required: ['data'],
              additionalProperties: false,
            }),
            ...errorResponses(400, 401, 404, 409, 413, 415),
          },
        },
      },
    }),
    components: {
      ...securityParts().components,
      schemas: {
        ...securityParts().components.schemas,
        ...tableSchemas(table),
        ...aggregateSchemas(table),
        ...streams.schemas,
        BatchOperation: batchOperation(table),
      },
    },
  };
}

function batchOperation(table: TableDef): Schema {
  const tableId = { enum: table.code === null ? [table.id] : [table.id, table.code], description: 'This table, by id or code.' };
  const op = (type: string, properties: Record<string, Schema>, required: string[]) => ({
    type: 'object',
    properties: { type: { const: type }, tableId, ...properties },
    required: ['type', 'tableId', ...required],
    additionalProperties: false,
  });
  return {
    oneOf: [
      op('create', { id: ref('RowId'), values: ref('CreateValues'), options: { type: 'object', properties: { upsert: { type: 'boolean' } }, additionalProperties: false } }, ['values']),
      op('update', { id: ref('RowId'), values: ref('UpdateValues') }, ['id', 'values']),
      op('delete', { id: ref('RowId') }, ['id']),
    ],
  };
}
