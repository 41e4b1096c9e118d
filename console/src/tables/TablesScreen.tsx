import { useCallback, useEffect, useState } from 'react';
import { type Api, ApiError, type Table } from '../api.ts';
import { Dialog } from '../Dialog.tsx';
import { ErrorBox } from '../ErrorBox.tsx';
import { go } from '../location.ts';
import { TableDialog } from './TableDialog.tsx';

/** Every table the key may see: open one, create, edit or delete. */
export function TablesScreen({ api, onSignedOut }: { api: Api; onSignedOut: () => void }) {
  const [tables, setTables] = useState<Table[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [editing, setEditing] = useState<Table | 'new' | null>(null);
  const [deleting, setDeleting] = useState<Table | null>(null);

  const load = useCallback(async () => {
    try {
      setTables(await api.tables());
      setError(null);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return onSignedOut();
      setError(err);
    }
  }, [api, onSignedOut]);
  useEffect(() => void load(), [load]);

  return (
    <section aria-labelledby="tables-title">
      <div className="screen-head">
        <h1 id="tables-title">Tables</h1>
        <button type="button" onClick={() => setEditing('new')}>New table</button>
      </div>
      <ErrorBox error={error} />
      {tables === null ? (
        <p role="status">Loading tables…</p>
      ) : tables.length === 0 ? (
        <p>No tables yet. Create one with New table.</p>
      ) : (
        <table className="list">
          <caption className="visually-hidden">Tables</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Code</th>
              <th scope="col">Fields</th>
              <th scope="col">Description</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {tables.map((t) => (
              <tr key={t.id}>
                <th scope="row">
                  <a href={`console?table=${encodeURIComponent(t.code ?? t.id)}`} onClick={(e) => { e.preventDefault(); go({ table: t.code ?? t.id, filter: null, sort: null }); }}>
                    {t.name}
                  </a>
                </th>
                <td><code>{t.code}</code></td>
                <td>{t.fields.length}</td>
                <td>{t.description}</td>
                <td className="actions">
                  <button type="button" onClick={() => setEditing(t)} aria-label={`Edit table ${t.name}`}>Edit</button>
                  <button type="button" className="danger" onClick={() => setDeleting(t)} aria-label={`Delete table ${t.name}`}>Delete</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {editing && (
        <TableDialog
          api={api}
          table={editing === 'new' ? null : editing}
          onClose={() => setEditing(null)}
          onDone={() => {
            setEditing(null);
            void load();
          }}
        />
      )}
      {deleting && (
        <DeleteTableDialog
          api={api}
          table={deleting}
          onClose={() => setDeleting(null)}
          onDone={() => {
            setDeleting(null);
            void load();
          }}
        />
      )}
    </section>
  );
}

/** Deleting a table asks first, naming what goes with it. */
export function DeleteTableDialog({ api, table, onClose, onDone }: { api: Api; table: Table; onClose: () => void; onDone: () => void }) {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  async function confirm() {
    setBusy(true);
    try {
      await api.deleteTable(table.id);
      onDone();
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  }
  return (
    <Dialog title={`Delete table ${table.name}?`} onClose={onClose}>
      <p>
        This deletes the table <strong>{table.name}</strong>
        {table.code ? <> (<code>{table.code}</code>)</> : null}, every row in it, every file attached to its rows, and its{' '}
        {table.fields.length} {table.fields.length === 1 ? 'field' : 'fields'}
        {table.fields.length > 0 ? `: ${table.fields.map((f) => f.name).join(', ')}` : ''}. It cannot be undone.
      </p>
      <ErrorBox error={error} />
      <div className="actions">
        <button type="button" className="danger" onClick={confirm} disabled={busy}>Delete table {table.name}</button>
        <button type="button" onClick={onClose} autoFocus>Cancel</button>
      </div>
    </Dialog>
  );
}
