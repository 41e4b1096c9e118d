import { AUDIT_RELATIONS, type AttrSpec, type ResourceSpec } from './resource-spec.ts';

/**
 * Flow deliveries (issue "Change events", item 3): one per change a flow delivers, written by the
 * delivery worker (events/), read here. `createdBy` is the member whose change it delivers.
 */
const read = (type: AttrSpec['type'], schema: Record<string, unknown>, nullable = false): AttrSpec => ({ type, schema, nullable, create: 'no', update: false });
const timestamp = { type: 'string', maxLength: 64 };

export const flowDeliveries: ResourceSpec = {
  name: 'flow-deliveries',
  table: 'rh_flow_deliveries',
  label: 'flow delivery',
  readOnly: true,
  // A key limited to some tables sees only the deliveries of their changes (CONTRACT §12).
  tableRef: { column: 'tableId' },
  attrs: {
    flowId: read('text', { type: 'string' }),
    eventId: read('text', { type: 'string', description: 'The event’s id: the body’s `id` and the Rowhouse-Event-Id header, the same on every attempt.' }),
    tableId: read('text', { type: 'string' }),
    sequence: read('integer', { type: 'integer', description: 'The change’s sequence in its table’s change log.' }),
    type: read('text', { enum: ['create', 'update', 'delete'] }),
    status: read('text', { enum: ['pending', 'succeeded', 'failed'] }),
    attempts: read('integer', { type: 'integer', minimum: 0 }),
    lastResponseStatus: read('integer', { type: 'integer' }, true),
    lastError: read('text', { type: 'string' }, true),
    nextAttemptAt: read('timestamp', timestamp, true),
    change: { type: 'text', schema: { type: 'string' }, create: 'no', update: false, hidden: true },
    leaseUntil: { type: 'timestamp', schema: timestamp, create: 'no', update: false, hidden: true },
  },
  relations: AUDIT_RELATIONS,
  actions: {
    retry: {
      summary: 'Send a failed delivery again',
      description: 'One more attempt, made now, to the flow’s current URL: answers the delivery after it (succeeded, or failed again with the new error). Only a failed delivery of an enabled flow can be retried (409 otherwise).',
      errors: [409],
    },
  },
};
