import { useState } from 'react';
import type { Api } from '../api.ts';
import { ErrorBox } from '../ErrorBox.tsx';
import { type ApiKey, type Item, lacks } from '../scopes.ts';
import { adminHref, onAdminClick } from './place.ts';
import { type FormProps, FormShell, type ResourceKind, ResourceScreen } from './ResourceScreen.tsx';
import { saveItem, tableLabel, useTables } from './resources.ts';

/** Flows (docs/api.md, Flows and webhooks): a table's changes delivered to a URL. */

interface Definition {
  trigger?: { table: string; events: string[]; filter?: unknown };
  webhook?: { url: string; headers?: Record<string, string> };
}

export interface Flow extends Item {
  name: string;
  description: string | null;
  enabled: boolean;
  definition: Definition;
  /** The signing secret: in the create answer only. */
  secret?: string;
}

const EVENTS = ['create', 'update', 'delete'] as const;

export function FlowsScreen({ api, me, onSignedOut }: { api: Api; me: ApiKey; onSignedOut: () => void }) {
  const tables = useTables(api);
  const [error, setError] = useState<unknown>(null);
  const kind: ResourceKind<Flow> = {
    resource: 'flows',
    title: 'Flows',
    noun: 'flow',
    read: 'flows:read',
    write: 'flows:write',
    sorting: { name: 'asc' },
    label: (f) => f.name,
    columns: [
      { header: 'Name', cell: (f) => f.name },
      { header: 'Enabled', cell: (f) => (f.enabled ? 'on' : 'off') },
      { header: 'Table', cell: (f) => (f.definition.trigger ? tableLabel(tables, f.definition.trigger.table) : '— (draft)') },
      { header: 'Events', cell: (f) => f.definition.trigger?.events.join(', ') },
      { header: 'Webhook', cell: (f) => <code>{f.definition.webhook?.url}</code> },
    ],
    Form: FlowForm,
    deleteNote: (f) => `This deletes the flow ${f.name} and every delivery it made or still has to make. It cannot be undone.`,
    secret: (f) =>
      f.secret
        ? { title: `Flow ${f.name} created`, label: 'Signing secret', value: f.secret, note: 'The receiver checks the Rowhouse-Signature of each request with it.' }
        : null,
  };
  return (
    <>
      <ErrorBox error={error} />
      <ResourceScreen
        api={api}
        me={me}
        kind={kind}
        onSignedOut={onSignedOut}
        rowActions={(f, { writable, reasonId, list }) => (
          <>
            <button
              type="button"
              disabled={!writable}
              aria-describedby={reasonId}
              title={writable ? undefined : lacks('flows:write')}
              aria-label={`${f.enabled ? 'Disable' : 'Enable'} flow ${f.name}`}
              onClick={() => {
                setError(null);
                saveItem<Flow>(api, 'flows', f.id, { enabled: !f.enabled }).then(list.put, setError);
              }}
            >
              {f.enabled ? 'Disable' : 'Enable'}
            </button>
            <a href={adminHref('deliveries', f.id)} onClick={onAdminClick('deliveries', f.id)} aria-label={`Deliveries of flow ${f.name}`}>
              Deliveries
            </a>
          </>
        )}
      />
    </>
  );
}

/** The definition as a form: the trigger (table, events, filter) and the webhook (URL, headers). All left empty: a draft ({}). */
function FlowForm({ api, item, onSaved, onClose }: FormProps<Flow>) {
  const tables = useTables(api);
  const d = item?.definition ?? {};
  const [name, setName] = useState(item?.name ?? '');
  const [description, setDescription] = useState(item?.description ?? '');
  const [enabled, setEnabled] = useState(item?.enabled ?? false);
  const [table, setTable] = useState(d.trigger?.table ?? '');
  const [events, setEvents] = useState<string[]>(d.trigger?.events ?? []);
  const [filter, setFilter] = useState(d.trigger?.filter === undefined ? '' : JSON.stringify(d.trigger.filter, null, 2));
  const [url, setUrl] = useState(d.webhook?.url ?? '');
  const [headers, setHeaders] = useState(
    Object.entries(d.webhook?.headers ?? {})
      .map(([k, v]) => `${k}: ${v}`)
      .join('\n'),
  );

  function definition(): Definition {
    if (table === '' && url.trim() === '' && events.length === 0 && filter.trim() === '' && headers.trim() === '') return {};
    const trigger: NonNullable<Definition['trigger']> = { table, events };
    if (filter.trim() !== '') {
      try {
        trigger.filter = JSON.parse(filter);
      } catch (err) {
        throw new Error(`Filter: not valid JSON (${(err as Error).message})`);
      }
    }
    const webhook: NonNullable<Definition['webhook']> = { url: url.trim() };
    const lines = headers.split('\n').filter((l) => l.trim() !== '');
    if (lines.length > 0) {
      webhook.headers = {};
      for (const line of lines) {
        const at = line.indexOf(':');
        if (at <= 0) throw new Error(`Headers: “${line}” is not “Name: value”`);
        webhook.headers[line.slice(0, at).trim()] = line.slice(at + 1).trim();
      }
    }
    return { trigger, webhook };
  }
  const body = () => ({ name: name.trim(), description: description.trim() === '' ? null : description, enabled, definition: definition() });

  return (
    <FormShell api={api} resource="flows" noun="flow" item={item} body={body} onSaved={onSaved} onClose={onClose}>
      <div className="row-of-inputs">
        <label>
          Flow name
          <input value={name} onChange={(e) => setName(e.currentTarget.value)} required />
        </label>
        <label className="check">
          <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} />
          Enabled
        </label>
      </div>
      <label className="wide">
        Description
        <textarea rows={2} value={description} onChange={(e) => setDescription(e.currentTarget.value)} />
      </label>
      <fieldset>
        <legend>Trigger</legend>
        {tables !== null ? (
          <label>
            Table
            <select value={table} onChange={(e) => setTable(e.currentTarget.value)}>
              <option value="">— none (a draft) —</option>
              {table !== '' && !tables?.some((t) => t.id === table) && <option value={table}>{table}</option>}
              {(tables ?? []).map((t) => (
                <option key={t.id} value={t.id}>{t.name}{t.code ? ` (${t.code})` : ''}</option>
              ))}
            </select>
          </label>
        ) : (
          <label>
            Table (code or id)
            <input value={table} onChange={(e) => setTable(e.currentTarget.value)} spellCheck={false} />
          </label>
        )}
        <span role="group" aria-label="Events">
          {EVENTS.map((ev) => (
            <label key={ev} className="check">
              <input type="checkbox" checked={events.includes(ev)} onChange={(e) => setEvents(e.currentTarget.checked ? [...events, ev] : events.filter((x) => x !== ev))} />
              {ev}
            </label>
          ))}
        </span>
        <label className="wide">
          Filter (a rows filter as JSON; empty: every change)
          <textarea rows={3} value={filter} onChange={(e) => setFilter(e.currentTarget.value)} spellCheck={false} />
        </label>
      </fieldset>
      <fieldset>
        <legend>Webhook</legend>
        <label className="wide">
          Webhook URL
          <input type="url" value={url} onChange={(e) => setUrl(e.currentTarget.value)} spellCheck={false} />
        </label>
        <label className="wide">
          Headers (one per line, Name: value)
          <textarea rows={2} value={headers} onChange={(e) => setHeaders(e.currentTarget.value)} spellCheck={false} />
        </label>
      </fieldset>
    </FormShell>
  );
}
