import type { FastifyInstance } from 'fastify';
import { allTables } from '../domain/access.ts';
import { ServiceError } from '../domain/errors.ts';
import type { WebhookWorker } from '../events/webhook-worker.ts';
import type { ResourceStore } from '../store/resources/resource-store.ts';
import { needs } from './access.ts';

/** POST /api/flow-deliveries/{id}/retry (issue "Change events", item 3): a failed delivery sent once more, now. */
export function flowDeliveryRoutes(app: FastifyInstance, deliveries: ResourceStore, worker: WebhookWorker): void {
  app.post<{ Params: { id: string } }>('/api/flow-deliveries/:id/retry', needs.scope('flows:write'), async (request) => {
    const id = await deliveries.resolveId(request.params.id);
    // A key limited to some tables retries only the deliveries of their flows.
    const grant = request.principal?.grant;
    if (grant && !allTables(grant)) {
      const refused = await deliveries.tableRefusal(await deliveries.get(id), grant, 'flows:write');
      if (refused) throw refused;
    }
    const outcome = await worker.retry(id);
    if (outcome === 'flow-disabled') throw new ServiceError('delivery_not_retryable', `The flow of delivery ${id} is disabled: enable it to retry its deliveries`);
    if (outcome === 'not-failed') {
      const item = await deliveries.get(id); // 404 when there is none
      throw new ServiceError('delivery_not_retryable', `Only a failed delivery can be retried; delivery ${id} is ${String(item.status)}${item.status === 'failed' ? ' and being retried' : ''}`);
    }
    return deliveries.get(id);
  });
}
