import { useEffect, useId, useState } from 'react';
import type { Api } from '../api.ts';
import { ErrorBox } from '../ErrorBox.tsx';
import type { ApiKey, Item } from '../scopes.ts';
import { type Column, ItemTable } from '../ItemTable.tsx';
import { useRights } from '../rights.tsx';
import type { Flow } from './FlowsScreen.tsx';
import { goAdmin } from './place.ts';
import { when } from './ResourceScreen.tsx';
import { useList } from './resources.ts';

/**
 * Flow deliveries (docs/api.md, Deliveries): each with its status, the receiver's last answer and
 * error, filtered by flow (in the URL) and status; a failed one retried now.
 */

interface Delivery extends Item {
  flowId: string;
  eventId: string;
  tableId: string;
  sequence: number;
  type: 'create' | 'update' | 'delete';
  status: 'pending' | 'succeeded' | 'failed';
  attempts: number;
  lastResponseStatus: number | null;
  lastError: string | null;
  nextAttemptAt: string | null;
}

const STATUSES = ['pending', 'succeeded', 'failed'] as const;

export function DeliveriesScreen({ api, me, flow, onSignedOut }: { api: Api; me: ApiKey; flow: string | null; onSignedOut: () => void }) {
  const rights = useRights(me, null, {
    read: { scope: 'flows:read', without: 'deliveries are not listed here' },
    retry: { scope: 'flows:write', without: 'Retry is turned off' },
  });
  const readable = rights.refused('read') === null;
  const [status, setStatus] = useState('');
  const [message, setMessage] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [retrying, setRetrying] = useState<string | null>(null);
  const flows = useList<Flow>(api, 'flows', { sorting: { name: 'asc' } }, readable, onSignedOut);
  const filter: Record<string, unknown> = {};
  if (flow) filter.flowId = { eq: flow };
  if (status) filter.status = { eq: status };
  const list = useList<Delivery>(api, 'flow-deliveries', { filter, sorting: { createdAt: 'desc', sequence: 'desc' } }, readable, onSignedOut);
  const titleId = useId();
  const flowName = (id: string) => flows.items?.find((f) => f.id === id)?.name ?? id;
  const columns: Column<Delivery>[] = [
    { header: 'Change', cell: (d) => `${d.type} #${d.sequence}` },
    { header: 'Flow', cell: (d) => flowName(d.flowId) },
    { header: 'Status', cell: (d) => d.status },
    { header: 'Attempts', cell: (d) => d.attempts },
    { header: 'Answer', cell: (d) => d.lastResponseStatus ?? '—' },
    { header: 'Error', cell: (d) => d.lastError ?? '' },
    { header: 'Next attempt', cell: (d) => when(d.nextAttemptAt) },
    { header: 'Last change', cell: (d) => when(d.updatedAt) },
  ];

  // While a delivery is still being attempted, look again now and then.
  const pending = list.items?.some((d) => d.status === 'pending') ?? false;
  useEffect(() => {
    if (!pending) return;
    const timer = setInterval(list.reload, 3000);
    return () => clearInterval(timer);
  }, [pending, list.reload]);

  async function retry(d: Delivery) {
    setRetrying(d.id);
    setError(null);
    setMessage('');
    try {
      const after = await api.request<Delivery>('POST', `/api/flow-deliveries/${encodeURIComponent(d.id)}/retry`);
      list.put(after);
      setMessage(
        after.status === 'succeeded'
          ? `Delivery of change ${after.sequence} retried: succeeded.`
          : `Delivery of change ${after.sequence} retried: ${after.status}${after.lastError ? ` (${after.lastError})` : ''}.`,
      );
    } catch (err) {
      setError(err);
    } finally {
      setRetrying(null);
    }
  }

  return (
    <section aria-labelledby={titleId}>
      <div className="screen-head">
        <h1 id={titleId}>Deliveries{flow ? ` of flow ${flowName(flow)}` : ''}</h1>
        {readable && <button type="button" onClick={list.reload}>Refresh</button>}
      </div>
      {rights.note}
      {readable && (
        <>
          <div className="toolbar">
            <label>
              Flow
              <select value={flow ?? ''} onChange={(e) => goAdmin('deliveries', e.currentTarget.value || null)}>
                <option value="">Every flow</option>
                {flows.items?.map((f) => (
                  <option key={f.id} value={f.id}>{f.name}</option>
                ))}
              </select>
            </label>
            <label>
              Status
              <select value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
                <option value="">Any</option>
                {STATUSES.map((s) => (
                  <option key={s} value={s}>{s}</option>
                ))}
              </select>
            </label>
          </div>
          <p role="status" className="status">{message}</p>
          <ErrorBox error={error} />
          <ItemTable
            list={list}
            caption="Deliveries"
            things="deliveries"
            empty={`No deliveries${status ? ` ${status}` : ''} yet.`}
            columns={columns}
            rowClass={(d) => `delivery-${d.status}`}
            actions={(d) =>
              d.status === 'failed' && (
                <button type="button" onClick={() => retry(d)} disabled={retrying === d.id} {...rights.off('retry')} aria-label={`Retry delivery of change ${d.sequence}`}>
                  Retry
                </button>
              )
            }
          />
        </>
      )}
    </section>
  );
}
