import { useId, useState } from 'react';
import type { Api, Table } from '../api.ts';
import { ConfirmDialog } from '../ConfirmDialog.tsx';
import { refreshMe } from '../access.ts';
import { type ApiKey, can, lacks } from '../scopes.ts';
import { type FormProps, FormShell, type ResourceKind, ResourceScreen, when } from './ResourceScreen.tsx';
import { saveItem, tableLabel, useTables } from './resources.ts';

/**
 * API keys (CONTRACT §12): the key you are signed in with and what it may do; every key, created
 * with a name, scopes, tables and a rate limit (the key shown once), changed, revoked, deleted.
 */

function state(k: ApiKey): string {
  const now = Date.now();
  if (k.revokedAt && Date.parse(k.revokedAt) <= now) return 'revoked';
  if (k.expiresAt && Date.parse(k.expiresAt) <= now) return 'expired';
  return 'active';
}

/** Each scope and what it allows, in the words of docs/api.md (here, not in scopes.ts: the navigation's script needs none of it). */
const SCOPES: readonly (readonly [string, string])[] = [
  ['*', 'everything'],
  ['rows:read', 'read rows, their history and aggregates; follow changes'],
  ['rows:create', 'create rows'],
  ['rows:update', 'change rows'],
  ['rows:delete', 'delete rows'],
  ['rows:export', 'export rows'],
  ['rows:import', 'import rows (with the write scopes of the import’s mode)'],
  ['schema:read', 'see tables and their fields'],
  ['schema:write', 'create, change and delete tables (with every table only)'],
  ['flows:read', 'see flows and their deliveries'],
  ['flows:write', 'create, change and delete flows; retry deliveries'],
  ['resources:read', 'see environment variables and members'],
  ['resources:write', 'create, change and delete environment variables and members'],
  ['keys:manage', 'see, create, change and revoke API keys'],
];

const scopesText = (k: ApiKey) => k.scopes.join(', ');
const tablesText = (tables: Table[] | null | undefined, k: ApiKey) => k.tables.map((t) => tableLabel(tables, t)).join(', ');
const limitText = (k: ApiKey) => (k.rateLimit ? `${k.rateLimit.requests} per ${k.rateLimit.perSeconds} s` : 'none');

export function KeysScreen({ api, me, onSignedOut }: { api: Api; me: ApiKey; onSignedOut: () => void }) {
  const tables = useTables(api);
  const [revoking, setRevoking] = useState<{ key: ApiKey; done: () => void } | null>(null);
  const kind: ResourceKind<ApiKey> = {
    resource: 'api-keys',
    title: 'API keys',
    noun: 'API key',
    read: 'keys:manage',
    write: 'keys:manage',
    sorting: { createdAt: 'desc' },
    label: (k) => k.name,
    columns: [
      { header: 'Name', cell: (k) => k.name },
      { header: 'Prefix', cell: (k) => <code>{k.prefix}…</code> },
      { header: 'Scopes', cell: scopesText },
      { header: 'Tables', cell: (k) => tablesText(tables, k) },
      { header: 'Rate limit', cell: limitText },
      { header: 'State', cell: (k) => (k.id === me.id ? `${state(k)} (yours)` : state(k)) },
      { header: 'Last used', cell: (k) => when(k.lastUsedAt) },
    ],
    Form: KeyForm,
    deleteNote: (k) =>
      `This deletes the API key ${k.name} (${k.prefix}…): whatever uses it is refused from the next request on.${k.id === me.id ? ' It is the key you are signed in with: the console signs out.' : ''} It cannot be undone.`,
    secret: (k) =>
      k.key ? { title: `API key ${k.name} created`, label: 'The new API key', value: k.key, note: 'Send it in the X-API-Key header. The service keeps only its hash.' } : null,
  };

  return (
    <>
      <ResourceScreen
        api={api}
        me={me}
        kind={kind}
        onSignedOut={onSignedOut}
        onChanged={() => refreshMe(api)}
        intro={<YourKey me={me} tables={tables} />}
        rowActions={(k, { writable, reasonId, list }) =>
          state(k) === 'active' && (
            <button
              type="button"
              className="danger"
              disabled={!writable}
              aria-describedby={reasonId}
              aria-label={`Revoke API key ${k.name}`}
              onClick={() => setRevoking({ key: k, done: list.reload })}
            >
              Revoke
            </button>
          )
        }
      />
      {revoking && (
        <ConfirmDialog
          title={`Revoke API key ${revoking.key.name}?`}
          note={`From the next request on, the service refuses the key ${revoking.key.name} (${revoking.key.prefix}…). It stays listed, revoked.${revoking.key.id === me.id ? ' It is the key you are signed in with: the console signs out.' : ''}`}
          confirm="Revoke key"
          run={() => saveItem(api, 'api-keys', revoking.key.id, { revokedAt: api.serverNow().toISOString() })}
          onClose={() => setRevoking(null)}
          onDone={() => {
            revoking.done();
            setRevoking(null);
            refreshMe(api);
          }}
        />
      )}
    </>
  );
}

/** The signed-in key: its name, what it may do, on which tables, how often. */
function YourKey({ me, tables }: { me: ApiKey; tables: Table[] | null | undefined }) {
  const id = useId();
  return (
    <section aria-labelledby={id} className="your-key">
      <h2 id={id}>Your key</h2>
      <dl className="system">
        <dt>Name</dt>
        <dd>{me.name}</dd>
        <dt>Prefix</dt>
        <dd><code>{me.prefix}…</code></dd>
        <dt>Tables</dt>
        <dd>{tablesText(tables, me)}</dd>
        <dt>Rate limit</dt>
        <dd>{limitText(me)}</dd>
        <dt>Expires</dt>
        <dd>{me.expiresAt ? when(me.expiresAt) : 'never'}</dd>
        <dt>May</dt>
        <dd>
          <ul className="scopes">
            {SCOPES.filter(([s]) => s !== '*' && can(me, s)).map(([s, text]) => (
              <li key={s}><code>{s}</code>: {text}</li>
            ))}
          </ul>
        </dd>
      </dl>
    </section>
  );
}

/** Creating or changing a key: name, scopes, tables, rate limit and expiry. A key may give only what it has (else 403). */
function KeyForm({ api, me, item, onSaved, onClose }: FormProps<ApiKey>) {
  const tables = useTables(api);
  const [name, setName] = useState(item?.name ?? '');
  const [scopes, setScopes] = useState<string[]>(item?.scopes ?? []);
  const [every, setEvery] = useState(item ? item.tables.includes('*') : me.tables.includes('*'));
  const [chosen, setChosen] = useState<string[]>(item && !item.tables.includes('*') ? item.tables : []);
  const [typed, setTyped] = useState(chosen.join(', '));
  const [requests, setRequests] = useState(item?.rateLimit ? String(item.rateLimit.requests) : '');
  const [perSeconds, setPerSeconds] = useState(item?.rateLimit ? String(item.rateLimit.perSeconds) : '');
  const [expires, setExpires] = useState(item?.expiresAt ? localInput(item.expiresAt) : '');
  const giveId = useId();
  const all = scopes.includes('*');

  const body = () => ({
    name: name.trim(),
    scopes,
    tables: every ? ['*'] : tables !== null ? chosen : typed.split(',').map((t) => t.trim()).filter((t) => t !== ''),
    rateLimit: requests === '' && perSeconds === '' ? null : { requests: Number(requests), perSeconds: Number(perSeconds) },
    expiresAt: expires === '' ? null : new Date(expires).toISOString(),
  });
  const toggle = (list: string[], value: string, on: boolean) => (on ? [...list, value] : list.filter((x) => x !== value));

  return (
    <FormShell api={api} resource="api-keys" noun="API key" item={item} body={body} onSaved={onSaved} onClose={onClose}>
      <label className="wide">
        Key name
        <input value={name} onChange={(e) => setName(e.currentTarget.value)} required />
      </label>
      <fieldset aria-describedby={giveId}>
        <legend>Scopes</legend>
        <p id={giveId} className="note">A key can give only the scopes and tables it has itself, and a rate limit within its own.</p>
        {SCOPES.map(([s, text]) => (
          <label key={s} className="check">
            <input
              type="checkbox"
              checked={all || scopes.includes(s)}
              disabled={(all && s !== '*') || !can(me, s)}
              title={can(me, s) ? undefined : lacks(s)}
              onChange={(e) => setScopes(s === '*' && e.currentTarget.checked ? ['*'] : toggle(scopes, s, e.currentTarget.checked))}
            />
            <code>{s}</code> {text}
            {!can(me, s) && <span className="note"> ({lacks(s)})</span>}
          </label>
        ))}
      </fieldset>
      <fieldset>
        <legend>Tables</legend>
        <label className="check">
          <input type="checkbox" checked={every} onChange={(e) => setEvery(e.currentTarget.checked)} disabled={!me.tables.includes('*')} />
          Every table{!me.tables.includes('*') && <span className="note"> (your key lacks access to every table)</span>}
        </label>
        {!every &&
          (tables !== null ? (
            (tables ?? []).map((t) => (
              <label key={t.id} className="check">
                <input type="checkbox" checked={chosen.includes(t.id)} onChange={(e) => setChosen(toggle(chosen, t.id, e.currentTarget.checked))} />
                {t.name} {t.code && <code>{t.code}</code>}
              </label>
            ))
          ) : (
            <label className="wide">
              Table codes or ids, separated by commas
              <input value={typed} onChange={(e) => setTyped(e.currentTarget.value)} spellCheck={false} />
            </label>
          ))}
      </fieldset>
      <fieldset>
        <legend>Rate limit (empty: the service’s default, ROWHOUSE_RATE_LIMIT, if one is set; else none)</legend>
        {me.rateLimit && (
          <p className="note">
            Your key is held to {me.rateLimit.requests} per {me.rateLimit.perSeconds} s: the keys it makes or changes need a limit no faster and with no larger burst.
          </p>
        )}
        <label>
          Requests
          <input type="number" min={1} step={1} value={requests} onChange={(e) => setRequests(e.currentTarget.value)} />
        </label>
        <label>
          Per seconds
          <input type="number" min={1} step={1} value={perSeconds} onChange={(e) => setPerSeconds(e.currentTarget.value)} />
        </label>
      </fieldset>
      <label>
        Expires (your local time; empty: never)
        <input type="datetime-local" value={expires} onChange={(e) => setExpires(e.currentTarget.value)} />
      </label>
    </FormShell>
  );
}

/** An instant as a datetime-local input's value, in the browser's zone. */
function localInput(iso: string): string {
  const d = new Date(iso);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}
