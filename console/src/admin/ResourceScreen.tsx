import { type ComponentType, type FormEvent, type ReactNode, useId, useState } from 'react';
import type { Api } from '../api.ts';
import { ConfirmDialog } from '../ConfirmDialog.tsx';
import { Dialog } from '../Dialog.tsx';
import { ErrorBox } from '../ErrorBox.tsx';
import { type ApiKey, type Item, can, lacks } from '../scopes.ts';
import { type Column, ItemTable } from '../ItemTable.tsx';
import { type List, deleteItem, saveItem, useList } from './resources.ts';
import { SecretDialog } from './SecretDialog.tsx';

/**
 * One generic resource's screen (API keys, flows, environment variables, members): its items, and
 * dialogs to create, edit and delete them. What the signed-in key may not do is turned off, with
 * the reason beside it; what the service refuses anyway is shown as it says it.
 */

export interface FormProps<T> {
  api: Api;
  me: ApiKey;
  item: T | null;
  onSaved: (saved: T) => void;
  onClose: () => void;
}

export interface ResourceKind<T extends Item> {
  resource: string;
  /** 'Environment variables' */
  title: string;
  /** 'environment variable' */
  noun: string;
  read: string;
  write: string;
  sorting: Record<string, 'asc' | 'desc'>;
  /** How an item is named in labels and confirmations. */
  label: (item: T) => string;
  columns: Column<T>[];
  Form: ComponentType<FormProps<T>>;
  /** What a delete takes with it, for the confirmation. */
  deleteNote?: (item: T) => string;
  /** A value a create answers once (an API key, a flow's secret), shown once. */
  secret?: (created: T) => { title: string; label: string; value: string; note: string } | null;
}

/** What a row's own buttons get: whether the key may write, and the id of the reason when not. */
export interface RowContext<T> {
  writable: boolean;
  reasonId: string | undefined;
  list: List<T>;
}

export function ResourceScreen<T extends Item>({
  api,
  me,
  kind,
  onSignedOut,
  intro,
  rowActions,
  onChanged,
}: {
  api: Api;
  me: ApiKey;
  kind: ResourceKind<T>;
  onSignedOut: () => void;
  intro?: ReactNode;
  rowActions?: (item: T, ctx: RowContext<T>) => ReactNode;
  /** After any create, update or delete made here. */
  onChanged?: () => void;
}) {
  const readable = can(me, kind.read);
  const writable = can(me, kind.write);
  const list = useList<T>(api, kind.resource, { sorting: kind.sorting }, readable, onSignedOut);
  const [editing, setEditing] = useState<T | 'new' | null>(null);
  const [deleting, setDeleting] = useState<T | null>(null);
  const [secret, setSecret] = useState<ReturnType<NonNullable<ResourceKind<T>['secret']>>>(null);
  const titleId = useId();
  const reasonId = useId();
  const things = /^[A-Z]{2}/.test(kind.title) ? kind.title : kind.title.toLowerCase(); // 'API keys', 'flows'
  const reason = !readable
    ? `Your key lacks ${kind.read}${writable || kind.write === kind.read ? '' : ` and ${kind.write}`}: ${things} are not listed here${writable ? '' : ', and creating them is turned off'}. Ask for a key with ${kind.read}.`
    : !writable
      ? `Read only: your key lacks ${kind.write}, so creating, changing and deleting ${things} is turned off.`
      : null;
  const off = writable ? {} : { disabled: true, 'aria-describedby': reasonId, title: lacks(kind.write) };
  const changed = () => {
    list.reload();
    onChanged?.();
  };
  const { Form } = kind;

  return (
    <section aria-labelledby={titleId}>
      <div className="screen-head">
        <h1 id={titleId}>{kind.title}</h1>
        <button type="button" onClick={() => setEditing('new')} {...off}>
          New {kind.noun}
        </button>
      </div>
      {intro}
      {reason && (
        <p id={reasonId} className="note refused-note">
          {reason}
        </p>
      )}
      {readable && (
        <ItemTable
          list={list}
          caption={kind.title}
          things={things}
          empty={`No ${things} yet.`}
          columns={kind.columns}
          actions={(item) => (
            <>
              <button type="button" onClick={() => setEditing(item)} aria-label={`Edit ${kind.noun} ${kind.label(item)}`} {...off}>Edit</button>
              {rowActions?.(item, { writable, reasonId: writable ? undefined : reasonId, list })}
              <button type="button" className="danger" onClick={() => setDeleting(item)} aria-label={`Delete ${kind.noun} ${kind.label(item)}`} {...off}>
                Delete
              </button>
            </>
          )}
        />
      )}
      {editing && (
        <Dialog title={editing === 'new' ? `New ${kind.noun}` : `Edit ${kind.noun} ${kind.label(editing)}`} onClose={() => setEditing(null)} className="wide-dialog">
          <Form
            api={api}
            me={me}
            item={editing === 'new' ? null : editing}
            onClose={() => setEditing(null)}
            onSaved={(saved) => {
              setSecret(editing === 'new' ? (kind.secret?.(saved) ?? null) : null);
              setEditing(null);
              changed();
            }}
          />
        </Dialog>
      )}
      {deleting && (
        <ConfirmDialog
          title={`Delete ${kind.noun} ${kind.label(deleting)}?`}
          note={kind.deleteNote?.(deleting) ?? `This deletes the ${kind.noun} ${kind.label(deleting)}. It cannot be undone.`}
          confirm={`Delete ${kind.noun}`}
          run={() => deleteItem(api, kind.resource, deleting.id)}
          onClose={() => setDeleting(null)}
          onDone={() => {
            setDeleting(null);
            changed();
          }}
        />
      )}
      {secret && <SecretDialog {...secret} onClose={() => setSecret(null)} />}
    </section>
  );
}

/**
 * A create or edit form's frame: its submit (POST, or a partial PUT of the item), the service's
 * answer on failure (each detail with its path), Save and Cancel. `body` may throw to refuse input
 * before sending it (JSON that does not parse).
 */
export function FormShell<T>({ api, resource, noun, item, body, onSaved, onClose, children }: { api: Api; resource: string; noun: string; item: { id: string } | null; body: () => unknown; onSaved: (saved: T) => void; onClose: () => void; children: ReactNode }) {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  async function submit(e: FormEvent) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      onSaved(await saveItem<T>(api, resource, item?.id ?? null, body()));
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  }
  return (
    <form onSubmit={submit}>
      {children}
      <ErrorBox error={error} />
      <div className="actions">
        <button type="submit" disabled={busy}>{item ? `Save ${noun}` : `Create ${noun}`}</button>
        <button type="button" onClick={onClose}>Cancel</button>
      </div>
    </form>
  );
}

/** An instant as the API gives it (UTC), to the second. */
export const when = (iso: string | null) => (iso ? <time dateTime={iso}>{iso.replace('T', ' ').slice(0, 19)} UTC</time> : '—');
