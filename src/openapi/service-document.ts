import packageJson from '../../package.json' with { type: 'json' };
import { FIELD_TYPE_NAMES } from '../domain/field-types/field-type.ts';
import { fieldOptionsSchema } from '../domain/field-types/registry.ts';
import { type AttrType, DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, OPS_BY_TYPE, type QueryableAttrs, type ResourceOp } from '../domain/resource-query.ts';
import { members } from '../store/resources/members.ts';
import { type AttrSpec, type ResourceSpec, SYSTEM_ATTRS } from '../store/resources/resource-spec.ts';
import { MAX_MANY, bodySchema } from '../domain/requests/resource-bodies.ts';
import { type Schema, errorResponses, idempotentWrites, jsonBody, jsonResponse, ref, securityParts } from './common.ts';
import { jsonParam, tableDocument } from './table-document.ts';
import { signedStreamPaths } from './stream-paths.ts';
import type { TableDef } from '../domain/table.ts';
import { CompiledTable } from '../domain/compiled-table.ts';

/**
 * The service's own OpenAPI 3.1 document (CONTRACT §10, `GET /openapi.json`): every route the app
 * registers. The generic resources are described from their specs (attrs, relations, the bodies
 * their store validates); the rows routes are the per-table document's operations over a table
 * named in the path, with `values` left open (each table's own document has its fields).
 */

/** A generic resource as its routes serve it: its spec and what its list query accepts (a ResourceStore is one). */
export interface DocumentedResource {
  readonly spec: ResourceSpec;
  readonly queryable: QueryableAttrs;
}

type Operation = Schema & { tags?: string[]; description?: string };
type PathItem = Record<string, Operation | Schema[]> & { parameters?: Schema[] };

/** `environment-variables` → `EnvironmentVariables`; the singular drops the final s. */
function schemaNames(spec: ResourceSpec): { many: string; one: string } {
  const many = spec.name
    .split('-')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('');
  return { many, one: many.replace(/s$/, '') };
}

/** How a value of each attribute type reads in JSON (an attribute's own schema narrows it). */
const ATTR_VALUE: Record<AttrType, Schema> = {
  text: { type: 'string' },
  integer: { type: 'integer' },
  timestamp: { type: 'string', format: 'date-time' },
  boolean: { type: 'boolean' },
  json: {},
};

const orNull = (schema: Schema): Schema => ({ anyOf: [schema, { type: 'null' }] });

/** A filter operator's operand on an attribute of that type (as domain/resource-query.ts checks it). */
function operand(type: AttrType, op: ResourceOp): Schema {
  if (op === 'is' || op === 'isNot') return type === 'boolean' ? { type: ['boolean', 'null'] } : { type: 'null' };
  if (op === 'in' || op === 'notIn') return { type: 'array', items: ATTR_VALUE[type], minItems: 1, maxItems: MAX_PAGE_LIMIT };
  return ATTR_VALUE[type];
}

/** Attributes read otherwise than their written schema says, by resource and attribute. */
const READ_SCHEMAS: Record<string, Record<string, Schema>> = {
  tables: { fields: { type: 'array', items: ref('Field'), description: 'The fields, in order.' } },
};

/** A field of a table as read: one shape per field type, with that type's options (the registry's). */
const fieldSchema: Schema = {
  description: 'A field of a table. Write them in `fields` of a create or update: leave `id` out to add a field, give it to keep or change one; a field left out of the list is deleted.',
  oneOf: FIELD_TYPE_NAMES.map((name) => ({
    type: 'object',
    title: name,
    properties: {
      id: { type: 'string', format: 'uuid' },
      code: { type: 'string' },
      name: { type: 'string' },
      type: { const: name },
      required: { type: 'boolean' },
      options: fieldOptionsSchema(name),
    },
    required: ['id', 'code', 'name', 'type', 'required', 'options'],
    additionalProperties: false,
  })),
};

/** The components of one resource: its item as read (and created, when a create answers more), its bodies, filter and sorting. */
function resourceSchemas({ spec, queryable }: DocumentedResource): Record<string, Schema> {
  const { one } = schemaNames(spec);
  const visible = Object.entries(spec.attrs).filter(([, a]) => !a.hidden);
  const read = (name: string, a: AttrSpec): Schema => {
    const value = READ_SCHEMAS[spec.name]?.[name] ?? { ...ATTR_VALUE[a.type], ...a.schema };
    return a.nullable ? orNull(value) : value;
  };
  const member = ref(schemaNames(members).one);
  const item = {
    type: 'object',
    properties: {
      ...Object.fromEntries(Object.entries(SYSTEM_ATTRS).map(([name, type]) => [name, ATTR_VALUE[type]])),
      ...Object.fromEntries(visible.map(([name, a]) => [name, read(name, a)])),
      ...Object.fromEntries(
        Object.entries(spec.relations).map(([relation, attr]) => [relation, { ...orNull(member), description: `With relations ["${relation}"]: the member ${attr} names.` }]),
      ),
    },
    required: [...Object.keys(SYSTEM_ATTRS), ...visible.map(([name]) => name)],
    additionalProperties: false,
  };
  const condition = (type: AttrType) => ({
    type: 'object',
    properties: Object.fromEntries(OPS_BY_TYPE[type].map((op) => [op, operand(type, op)])),
    minProperties: 1,
    additionalProperties: false,
  });
  const sortable = Object.entries(queryable.types).filter(([, type]) => type !== 'json');
  return {
    [one]: item,
    ...(spec.createAnswers
      ? {
          [`${one}Created`]: {
            ...item,
            description: `The ${spec.label} as a create answers it.`,
            properties: { ...item.properties, ...spec.createAnswers },
            required: [...item.required, ...Object.keys(spec.createAnswers)],
          },
        }
      : {}),
    ...(spec.readOnly
      ? {}
      : {
          [`${one}Create`]: bodySchema(spec, 'create'),
          [`${one}Update`]: { ...bodySchema(spec, 'update'), description: 'The attributes to change; others keep their values.' },
        }),
    [`${one}Filter`]: {
      type: 'object',
      description: 'Conditions by attribute, `{operator: operand}`, all of which must hold; `and` and `or` combine filters.',
      properties: {
        ...Object.fromEntries(Object.entries(queryable.types).map(([name, type]) => [name, condition(type)])),
        and: { type: 'array', minItems: 1, items: ref(`${one}Filter`) },
        or: { type: 'array', minItems: 1, items: ref(`${one}Filter`) },
      },
      additionalProperties: false,
    },
    [`${one}Sorting`]: {
      type: 'object',
      description: 'Attributes to sort by, in priority order (the order of the keys); `id` breaks ties.',
      properties: Object.fromEntries(sortable.map(([name]) => [name, { enum: ['asc', 'desc'] }])),
      additionalProperties: false,
    },
  };
}

const dataOf = (items: Schema): Schema => ({ type: 'object', properties: { data: { type: 'array', items } }, required: ['data'], additionalProperties: false });
const atMost = (items: Schema): Schema => ({ type: 'array', maxItems: MAX_MANY, items });

/** The list, get, create, update and delete routes of one resource, and their `*-many` forms. */
function resourcePaths(resource: DocumentedResource): Record<string, PathItem> {
  const paths = allResourcePaths(resource);
  const { spec } = resource;
  if (spec.readOnly) {
    for (const [path, item] of Object.entries(paths)) {
      const { parameters, get } = item as PathItem & { get?: Operation };
      if (get) paths[path] = { ...(parameters ? { parameters } : {}), get };
      else delete paths[path];
    }
  }
  const { one } = schemaNames(spec);
  for (const [action, { summary, description, errors }] of Object.entries(spec.actions ?? {})) {
    paths[`/api/${spec.name}/{id}/${action}`] = {
      parameters: [{ name: 'id', in: 'path', required: true, description: `The ${spec.label}’s id.`, schema: { type: 'string' } }],
      post: {
        operationId: `${action}${one}`,
        tags: [spec.name],
        summary,
        description,
        responses: { 200: jsonResponse(`The ${spec.label} after it.`, ref(one)), ...errorResponses(401, 404, ...errors) },
      },
    };
  }
  return paths;
}

function allResourcePaths({ spec, queryable }: DocumentedResource): Record<string, PathItem> {
  const { one, many } = schemaNames(spec);
  const base = `/api/${spec.name}`;
  const tags = [spec.name];
  const label = spec.label;
  const created = ref(spec.createAnswers ? `${one}Created` : one);
  const relations = jsonParam('relations', 'Members to embed in each item, each under its relation’s name.', { type: 'array', items: { enum: [...queryable.relations] } });
  const idParam = {
    name: 'id',
    in: 'path',
    required: true,
    description: spec.hooks?.resolveId ? `The ${label}’s id or code.` : `The ${label}’s id.`,
    schema: { type: 'string' },
  };
  const writeErrors = [400, 401, 409, 413, 415];
  // The calling key's own record, for any valid key: relations as for a key by id.
  const me: Record<string, PathItem> =
    spec.name === 'api-keys'
      ? {
          [`${base}/me`]: {
            get: {
              operationId: 'apiKeyMe',
              tags,
              summary: 'The calling key’s own record: its scopes, tables and rate limit (any valid key)',
              parameters: [relations],
              responses: { 200: jsonResponse('The calling API key.', ref(one)), ...errorResponses(400, 401) },
            },
          },
        }
      : {};
  return {
    ...me,
    [base]: {
      get: {
        operationId: `list${many}`,
        tags,
        summary: `A page of ${label}s`,
        parameters: [
          jsonParam('paging', `At most \`limit\` items (default ${DEFAULT_PAGE_LIMIT}) after the first \`offset\`.`, ref('Paging')),
          jsonParam('filter', 'Which items.', ref(`${one}Filter`)),
          jsonParam('sorting', 'Their order.', ref(`${one}Sorting`)),
          relations,
        ],
        responses: {
          200: jsonResponse('The page; `pagination.nextOffset` is null on the last one.', {
            type: 'object',
            properties: { data: { type: 'array', items: ref(one) }, pagination: ref('Pagination') },
            required: ['data', 'pagination'],
            additionalProperties: false,
          }),
          ...errorResponses(400, 401),
        },
      },
      post: {
        operationId: `create${one}`,
        tags,
        summary: `Create a ${label}`,
        requestBody: jsonBody(ref(`${one}Create`)),
        responses: { 201: jsonResponse('Created.', created), ...errorResponses(...writeErrors) },
      },
    },
    [`${base}/create-many`]: {
      post: {
        operationId: `createMany${many}`,
        tags,
        summary: `Create up to ${MAX_MANY} ${label}s, all or none`,
        requestBody: jsonBody(atMost(ref(`${one}Create`))),
        responses: { 201: jsonResponse('The items, in request order.', dataOf(created)), ...errorResponses(...writeErrors) },
      },
    },
    [`${base}/update-many`]: {
      put: {
        operationId: `updateMany${many}`,
        tags,
        summary: `Update up to ${MAX_MANY} ${label}s (each by its id), all or none`,
        requestBody: jsonBody(atMost({ allOf: [ref(`${one}Update`)], required: ['id'] })),
        responses: { 200: jsonResponse('The items after the change, in request order.', dataOf(ref(one))), ...errorResponses(...writeErrors, 404) },
      },
    },
    [`${base}/delete-many`]: {
      delete: {
        operationId: `deleteMany${many}`,
        tags,
        summary: `Delete up to ${MAX_MANY} ${label}s by id, all or none`,
        requestBody: jsonBody(atMost({ type: 'string', minLength: 1 })),
        responses: { 200: jsonResponse('The items deleted, in request order.', dataOf(ref(one))), ...errorResponses(...writeErrors, 404) },
      },
    },
    [`${base}/{id}`]: {
      parameters: [idParam],
      get: {
        operationId: `get${one}`,
        tags,
        summary: `One ${label}`,
        parameters: [relations],
        responses: { 200: jsonResponse(`The ${label}.`, ref(one)), ...errorResponses(400, 401, 404) },
      },
      put: {
        operationId: `update${one}`,
        tags,
        summary: `Update some attributes of a ${label}`,
        requestBody: jsonBody(ref(`${one}Update`)),
        responses: { 200: jsonResponse(`The ${label} after the change.`, ref(one)), ...errorResponses(...writeErrors, 404) },
      },
      delete: {
        operationId: `delete${one}`,
        tags,
        summary: `Delete a ${label}`,
        responses: { 200: jsonResponse(`The ${label} deleted.`, ref(one)), ...errorResponses(401, 404, 409) },
      },
    },
  };
}

const TABLE_PARAM = '{tableIdOrCode}';

/** A table with no fields, named by the path parameter: the per-table document of it is the rows routes of any table. */
const ANY_TABLE: TableDef = { id: TABLE_PARAM, code: null, name: 'any table', version: 1, physical: '', fields: [], fieldsByCode: new Map(), hasFiles: false, incoming: [], compiled: new CompiledTable([]) };

/** A row's values in the service's document: any fields, which each table's own document describes. */
const openValues = (description: string): Schema => ({
  type: 'object',
  description: `${description} Keyed by field code; GET /api/tables/{tableId}/openapi describes a table’s fields.`,
  additionalProperties: true,
});

/** The rows routes: the per-table document's operations, the table a path parameter and `values` open. */
function rowsPart(publicUrl: string): { paths: Record<string, PathItem>; schemas: Record<string, Schema> } {
  const doc = tableDocument(ANY_TABLE, publicUrl) as { paths: Record<string, PathItem>; components: { schemas: Record<string, Schema> } };
  const tableParam = { name: TABLE_PARAM.slice(1, -1), in: 'path', required: true, description: 'The table, by id or code.', schema: { type: 'string' } };
  for (const [path, item] of Object.entries(doc.paths)) {
    if (path.includes(TABLE_PARAM)) item.parameters = [tableParam, ...(item.parameters ?? [])];
    for (const [key, op] of Object.entries(item)) if (key !== 'parameters') (op as Operation).tags = ['rows'];
  }
  ((doc.paths['/api/rows-batch'] as PathItem).post as Operation).description = 'Creates, updates and deletes of rows of any tables, each naming its table by id or code: all done, or none.';
  const { Error: _error, ...schemas } = doc.components.schemas;
  schemas.Values = openValues('A row’s values: every field of the table, null where empty.');
  schemas.CreateValues = openValues('Values of a new row. Fields left out are null; required fields must be given.');
  schemas.UpdateValues = openValues('The fields to change; others keep their values.');
  (schemas.Filter.properties as Record<string, Schema>).values = {
    type: 'object',
    description: 'Conditions on fields by field code, `{operator: operand}`; a table’s own document lists each field’s operators.',
    additionalProperties: { type: 'object', minProperties: 1 },
  };
  const sortItems = schemas.Sort.items as { properties: Record<string, Schema> };
  schemas.Sort.items = { type: 'object', description: 'One key: a field code or a system column.', additionalProperties: sortItems.properties.id, minProperties: 1, maxProperties: 1 };
  for (const op of schemas.BatchOperation.oneOf as { properties: Record<string, Schema> }[]) op.properties.tableId = tableParam.schema;
  return { paths: doc.paths, schemas };
}

const STATUS_OK: Schema = { type: 'object', properties: { status: { const: 'ok' } }, required: ['status'], additionalProperties: false };
/** No API key: the health checks, this document, its page and the signed file URLs. */
const NO_KEY = { security: [] as Schema[] };

/** The routes outside the resources and rows: health, the documents, and the signed file URLs. */
function servicePaths(): Record<string, PathItem> {
  const tags = ['service'];
  const uuid = { type: 'string', format: 'uuid' };
  const signed = [
    { name: 'expires', in: 'query', required: true, schema: { type: 'string', pattern: '^\\d{1,12}$' }, description: 'Unix seconds; part of the URL as it was given.' },
    { name: 'signature', in: 'query', required: true, schema: { type: 'string' }, description: 'Part of the URL as it was given.' },
  ];
  return {
    '/healthz': { get: { operationId: 'healthz', tags, summary: 'Liveness: the process answers', ...NO_KEY, responses: { 200: jsonResponse('Alive.', STATUS_OK), ...errorResponses() } } },
    '/readyz': { get: { operationId: 'readyz', tags, summary: 'Readiness: the database answers', ...NO_KEY, responses: { 200: jsonResponse('Ready.', STATUS_OK), ...errorResponses() } } },
    '/openapi.json': {
      get: { operationId: 'serviceDocument', tags, summary: 'This document', ...NO_KEY, responses: { 200: jsonResponse('The OpenAPI 3.1 document of the whole service.', { type: 'object' }), ...errorResponses() } },
    },
    '/docs': {
      get: {
        operationId: 'docs',
        tags,
        summary: 'This reference, browsable (Swagger UI, served by the service itself)',
        ...NO_KEY,
        responses: { 200: { description: 'An HTML page.', content: { 'text/html': { schema: { type: 'string' } } } }, ...errorResponses() },
      },
    },
    '/console': {
      get: {
        operationId: 'console',
        tags,
        summary: 'The browser console: sign in with an API key to work with tables and rows (its assets are under /console/assets/)',
        ...NO_KEY,
        responses: { 200: { description: 'An HTML page.', content: { 'text/html': { schema: { type: 'string' } } } }, ...errorResponses() },
      },
    },
    '/api/tables/{tableId}/openapi': {
      parameters: [{ name: 'tableId', in: 'path', required: true, description: 'The table’s id (a code answers 404).', schema: uuid }],
      get: {
        operationId: 'tableDocument',
        tags: ['tables'],
        summary: 'The OpenAPI 3.1 document of a table’s rows, its fields’ schemas included',
        responses: { 200: jsonResponse('The document; it changes when the table’s fields do.', { type: 'object' }), ...errorResponses(401, 404) },
      },
    },
    '/files/{tableId}/{rowId}/{fileId}': {
      parameters: [
        { name: 'tableId', in: 'path', required: true, schema: uuid },
        { name: 'rowId', in: 'path', required: true, schema: ref('RowId') },
        { name: 'fileId', in: 'path', required: true, schema: uuid },
      ],
      put: {
        operationId: 'uploadFile',
        tags: ['files'],
        summary: 'Upload a file’s bytes (step 2 of attaching files): the URL file-upload-url gave',
        description: 'Signed, so it needs no API key. Local storage only: on S3, file-upload-url gives the bucket’s presigned URLs.',
        ...NO_KEY,
        parameters: signed,
        requestBody: { required: true, description: 'The bytes; the Content-Type is the file’s type.', content: { '*/*': { schema: { type: 'string', format: 'binary' } } } },
        responses: {
          200: jsonResponse('Received.', { type: 'object', properties: { id: uuid, size: { type: 'integer', minimum: 0 } }, required: ['id', 'size'], additionalProperties: false }),
          ...errorResponses(400, 403, 404, 409, 413),
        },
      },
      get: {
        operationId: 'downloadFile',
        tags: ['files'],
        summary: 'Download a file: the URL a row’s file value gives',
        description: 'Signed, so it needs no API key; valid 1 hour.',
        ...NO_KEY,
        parameters: [{ name: 'name', in: 'query', required: true, schema: { type: 'string' }, description: 'The name to save the file as; part of the URL as it was given.' }, ...signed],
        responses: {
          200: { description: 'The bytes, with the type they were uploaded with.', headers: { 'Content-Disposition': { schema: { type: 'string' } } }, content: { '*/*': { schema: { type: 'string', format: 'binary' } } } },
          ...errorResponses(403, 404),
        },
      },
    },
  };
}

/** Adds entries to a map whose keys must not repeat (paths, component names). */
function merge<T>(into: Record<string, T>, from: Record<string, T>, what: string): void {
  for (const [key, value] of Object.entries(from)) {
    if (key in into) throw new Error(`OpenAPI: ${what} ${key} is described twice`);
    into[key] = value;
  }
}

/** The service's OpenAPI document, served at `publicUrl`. */
export function serviceDocument(resources: readonly DocumentedResource[], publicUrl: string): Schema {
  const security = securityParts();
  const rows = rowsPart(publicUrl);
  const paths: Record<string, PathItem> = {};
  const schemas: Record<string, Schema> = { ...security.components.schemas };
  merge(paths, servicePaths(), 'path');
  for (const resource of resources) {
    merge(paths, resourcePaths(resource), 'path');
    merge(schemas, resourceSchemas(resource), 'schema');
  }
  merge(paths, rows.paths, 'path');
  merge(paths, signedStreamPaths(jsonParam('filter', 'Which rows.', ref('Filter'))), 'path');
  merge(schemas, rows.schemas, 'schema');
  merge(
    schemas,
    {
      Field: fieldSchema,
      Paging: {
        type: 'object',
        properties: { limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE_LIMIT, default: DEFAULT_PAGE_LIMIT }, offset: { type: 'integer', minimum: 0, default: 0 } },
        additionalProperties: false,
      },
      Pagination: {
        type: 'object',
        properties: {
          limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE_LIMIT },
          count: { type: 'integer', minimum: 0 },
          offset: { type: 'integer', minimum: 0 },
          nextOffset: { type: ['integer', 'null'], minimum: 0 },
        },
        required: ['limit', 'count', 'offset', 'nextOffset'],
        additionalProperties: false,
      },
    },
    'schema',
  );
  return {
    openapi: '3.1.0',
    info: {
      title: 'Rowhouse',
      version: packageJson.version,
      description:
        'Rows of user-defined tables over HTTP/JSON. Every `/api` request needs an API key in the `X-API-Key` header. ' +
        'Row `values` are described here for any table; each table’s own document (`GET /api/tables/{tableId}/openapi`) gives its fields’ schemas.',
    },
    servers: [{ url: publicUrl }],
    security: security.security,
    tags: [
      { name: 'rows', description: 'The rows of a table, named by id or code.' },
      ...resources.map(({ spec }) => ({ name: spec.name, description: `Generic resource: ${spec.label}s.` })),
      { name: 'files', description: 'The signed URLs of file attachments.' },
      { name: 'service', description: 'Health, and this reference.' },
    ],
    paths: idempotentWrites(paths),
    components: { securitySchemes: security.components.securitySchemes, schemas },
  };
}
