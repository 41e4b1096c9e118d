import { useEffect, useId, useState } from 'react';
import type { Api } from '../api.ts';
import { AdminError } from './AdminError.tsx';
import { type ApiKey, type Item, can, lacks } from './access.ts';
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
  const readable = can(me, 'flows:read');
  const writable = can(me, 'flows:write');
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
  const reasonId = useId();
  const flowName = (id: string) => flows.items?.find((f) => f.id === id)?.name ?? id;

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
      {!readable ? (
        <p className="note refused-note">Deliveries need flows:read, and the key you are signed in with lacks it.</p>
      ) : (
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
          {!writable && (
            <p id={reasonId} className="note refused-note">
              Your key lacks flows:write, so Retry is turned off.
            </p>
          )}
          <p role="status" className="status">{message}</p>
          <AdminError error={error ?? list.error} />
          {list.items === null ? (
            !list.error && <p role="status">Loading deliveries…</p>
          ) : list.items.length === 0 ? (
            <p>No deliveries{status ? ` ${status}` : ''} yet.</p>
          ) : (
            <table className="list">
              <caption className="visually-hidden">Deliveries</caption>
              <thead>
                <tr>
                  <th scope="col">Change</th>
                  <th scope="col">Flow</th>
                  <th scope="col">Status</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">Answer</th>
                  <th scope="col">Error</th>
                  <th scope="col">Next attempt</th>
                  <th scope="col">Last change</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {list.items.map((d) => (
                  <tr key={d.id} className={`delivery-${d.status}`}>
                    <th scope="row">{d.type} #{d.sequence}</th>
                    <td>{flowName(d.flowId)}</td>
                    <td>{d.status}</td>
                    <td>{d.attempts}</td>
                    <td>{d.lastResponseStatus ?? '—'}</td>
                    <td>{d.lastError ?? ''}</td>
                    <td>{when(d.nextAttemptAt)}</td>
                    <td>{when(d.updatedAt)}</td>
                    <td>
                      {d.status === 'failed' && (
                        <button
                          type="button"
                          onClick={() => retry(d)}
                          disabled={!writable || retrying === d.id}
                          aria-describedby={writable ? undefined : reasonId}
                          title={writable ? undefined : lacks('flows:write')}
                          aria-label={`Retry delivery of change ${d.sequence}`}
                        >
                          Retry
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {list.more && <button type="button" onClick={list.loadMore}>Load more</button>}
        </>
      )}
    </section>
  );
}
