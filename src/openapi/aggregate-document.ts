import { fieldType } from '../domain/field-types/registry.ts';
import { BUCKETS, BUCKETS_OF, MAX_GROUP_KEYS, MAX_METRICS, MAX_PAGE_SIZE, METRIC_FNS, groupable, isSingleLink } from '../domain/requests/aggregate-query.ts';
import { linkOptions } from '../domain/field-types/link.ts';
import { type RowColumn, SYSTEM_ORDER, fieldTarget } from '../domain/row-columns.ts';
import type { TableDef } from '../domain/table.ts';
import { type Schema, errorResponses, jsonResponse, ref } from './common.ts';

/**
 * The aggregate route in a table's OpenAPI document (CONTRACT §13): its parameters, each a JSON
 * text described by a schema over the table's fields, and its answer.
 */

const orderSpec = {
  type: 'object',
  properties: { direction: { enum: ['asc', 'desc'] }, nulls: { enum: ['nullsFirst', 'nullsLast'] } },
  required: ['direction', 'nulls'],
  additionalProperties: false,
};

const metricCondition = {
  type: 'object',
  properties: Object.fromEntries([...['_eq', '_gt', '_gte', '_lt', '_lte'].map((op) => [op, { type: ['number', 'string', 'boolean'] }]), ['_isNull', { type: 'boolean' }]]),
  additionalProperties: false,
  minProperties: 1,
};

/** The table's columns that can be group keys (and so counted distinctly, or taken the least or greatest of). */
function groupableColumns(table: TableDef): RowColumn[] {
  return [...SYSTEM_ORDER, ...table.fields.map(fieldTarget)].filter(groupable);
}

/** A group key's value in `group`: a bucket's label, a single link's linked row id, or a value in the field's format. */
function groupValueSchema(c: RowColumn): Schema {
  if (BUCKETS_OF[c.type.name]) return { type: 'string' };
  if (isSingleLink(c)) return { type: 'string', description: `the id of the linked row of table ${linkOptions(c.field).table}` };
  return fieldType(c.type.name).valueSchema(c.field);
}

/** The components of the aggregate route's parameters and answer. */
export function aggregateSchemas(table: TableDef): Record<string, Schema> {
  const columns = groupableColumns(table);
  const keys = columns.map((c) => c.key);
  const numbers = table.fields.filter((f) => f.type === 'number').map((f) => f.code);
  const dated = columns.filter((c) => BUCKETS_OF[c.type.name]);
  const links = columns.filter(isSingleLink).map((c) => c.key);
  const linkNote = links.length > 0 ? ` Single links (${links.join(', ')}) group by the linked row's id; multiple links cannot be group keys.` : ' A single link field groups by the linked row\'s id; multiple links cannot be group keys.';
  return {
    AggregateGroupBy: {
      type: 'array',
      maxItems: MAX_GROUP_KEYS,
      description: `Group keys: a field (or system column), and for ${dated.map((c) => c.key).join(', ') || 'date-like fields'} a bucket (${BUCKETS.join(', ')}; hour for date-times only), with the IANA time zone of a date-time's bucket (default UTC).${linkNote}`,
      items: {
        type: 'object',
        properties: { field: { enum: keys }, bucket: { enum: [...BUCKETS] }, timeZone: { type: 'string', examples: ['Asia/Tokyo'] } },
        required: ['field'],
        additionalProperties: false,
      },
    },
    AggregateMetrics: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_METRICS,
      description: `Metrics: count (rows), or ${METRIC_FNS.filter((f) => f !== 'count').join(', ')} of a field (sum and avg of ${numbers.join(', ') || 'number fields'}; min and max not of links). Named \`as\`, else count or <fn>_<field>.`,
      items: {
        type: 'object',
        properties: { fn: { enum: [...METRIC_FNS] }, field: { enum: keys }, as: { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9_]{0,63}$' } },
        required: ['fn'],
        additionalProperties: false,
      },
    },
    AggregateHaving: {
      type: 'object',
      description: 'Which groups: conditions on metrics by name (ANDed), with _and, _or and _not.',
      properties: { _and: { type: 'array', items: ref('AggregateHaving') }, _or: { type: 'array', items: ref('AggregateHaving') }, _not: ref('AggregateHaving') },
      additionalProperties: metricCondition,
    },
    AggregateSort: {
      type: 'array',
      description: 'The groups’ order: group keys (by field) and metrics (by name); then the other group keys ascending, nulls first.',
      items: { type: 'object', additionalProperties: orderSpec, minProperties: 1, maxProperties: 1 },
    },
    AggregatePage: {
      type: 'object',
      properties: {
        data: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              group: {
                type: 'object',
                description: 'The group keys by field: a value in its field’s format, a bucket’s label (YYYY, YYYY-Qn, YYYY-MM, YYYY-Www, YYYY-MM-DD, YYYY-MM-DDTHH), a single link’s linked row id, or null.',
                properties: Object.fromEntries(columns.map((c) => [c.key, { oneOf: [groupValueSchema(c), { type: 'null' }] }])),
                additionalProperties: false,
              },
              metrics: {
                type: 'object',
                description: 'The metrics by name: counts exact, sums and averages doubles, min and max in the field’s format; null over no values (a count: 0).',
                additionalProperties: { type: ['number', 'string', 'boolean', 'null'] },
              },
            },
            required: ['group', 'metrics'],
            additionalProperties: false,
          },
        },
        nextUrl: { type: ['string', 'null'], format: 'uri' },
      },
      required: ['data', 'nextUrl'],
      additionalProperties: false,
    },
  };
}

/** The path item of GET /rows-aggregate; `param` writes a JSON query parameter, `filter` is the rows filter's. */
export function aggregatePath(tags: string[], filter: Schema, param: (name: string, description: string, schema: Schema) => Schema): Schema {
  return {
    get: {
      operationId: 'aggregateRows',
      tags,
      summary: 'Counts, sums and date buckets of rows, per group',
      description: 'One page of groups of the rows the filter selects, computed by the database. Follow `nextUrl` until it is null.',
      parameters: [
        param('groupBy', 'Group keys (none: one group of every row).', ref('AggregateGroupBy')),
        param('metrics', 'What to compute per group (default count).', ref('AggregateMetrics')),
        filter,
        param('having', 'Which groups.', ref('AggregateHaving')),
        param('sort', 'The groups’ order.', ref('AggregateSort')),
        { name: 'pageSize', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: 100 } },
        { name: 'cursor', in: 'query', required: false, description: 'From the previous page’s `nextUrl`; only with the same groupBy, metrics, filter, having and sort.', schema: { type: 'string' } },
      ],
      responses: {
        200: { ...jsonResponse('The page of groups.', ref('AggregatePage')), headers: { Link: { description: '`<nextUrl>; rel="next"` while there is a next page.', schema: { type: 'string' } } } },
        ...errorResponses(400, 401, 404),
      },
    },
  };
}
