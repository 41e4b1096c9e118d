import { useCallback, useEffect, useState } from 'react';
import { type Api, ApiError, type Table } from '../api.ts';
import { ConfirmDialog } from '../ConfirmDialog.tsx';
import type { ApiKey } from '../scopes.ts';
import { type Column, ItemTable } from '../ItemTable.tsx';
import { go } from '../location.ts';
import { WithMe, useRights } from '../rights.tsx';
import { TableDialog } from './TableDialog.tsx';

/** Every table the key may see: open one, create, edit or delete (each turned off, saying why, for a key without schema:write on every table). */
export function TablesScreen({ api, onSignedOut }: { api: Api; onSignedOut: () => void }) {
  return <WithMe api={api} onSignedOut={onSignedOut}>{(me) => <Tables api={api} me={me} onSignedOut={onSignedOut} />}</WithMe>;
}

function Tables({ api, me, onSignedOut }: { api: Api; me: ApiKey; onSignedOut: () => void }) {
  const [tables, setTables] = useState<Table[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [editing, setEditing] = useState<Table | 'new' | null>(null);
  const [deleting, setDeleting] = useState<Table | null>(null);
  const rights = useRights(me, null, { schema: { scope: 'schema:write', without: 'tables cannot be created, changed or deleted here' } });

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

  const columns: Column<Table>[] = [
    {
      header: 'Name',
      cell: (t) => (
        <a href={`console?table=${encodeURIComponent(t.code ?? t.id)}`} onClick={(e) => { e.preventDefault(); go({ table: t.code ?? t.id, filter: null, sort: null }); }}>
          {t.name}
        </a>
      ),
    },
    { header: 'Code', cell: (t) => <code>{t.code}</code> },
    { header: 'Fields', cell: (t) => t.fields.length },
    { header: 'Description', cell: (t) => t.description },
  ];

  return (
    <section aria-labelledby="tables-title">
      <div className="screen-head">
        <h1 id="tables-title">Tables</h1>
        <button type="button" onClick={() => setEditing('new')} {...rights.off('schema')}>New table</button>
      </div>
      {rights.note}
      <ItemTable
        list={{ items: tables, error }}
        caption="Tables"
        things="tables"
        empty={rights.refused('schema') ? 'No tables that your key may see.' : 'No tables yet. Create one with New table.'}
        columns={columns}
        actions={(t) => (
          <>
            <button type="button" onClick={() => setEditing(t)} aria-label={`Edit table ${t.name}`} {...rights.off('schema')}>Edit</button>
            <button type="button" className="danger" onClick={() => setDeleting(t)} aria-label={`Delete table ${t.name}`} {...rights.off('schema')}>Delete</button>
          </>
        )}
      />
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
function DeleteTableDialog({ api, table, onClose, onDone }: { api: Api; table: Table; onClose: () => void; onDone: () => void }) {
  return (
    <ConfirmDialog
      title={`Delete table ${table.name}?`}
      note={
        <>
          This deletes the table <strong>{table.name}</strong>
          {table.code ? <> (<code>{table.code}</code>)</> : null}, every row in it, every file attached to its rows, and its{' '}
          {table.fields.length} {table.fields.length === 1 ? 'field' : 'fields'}
          {table.fields.length > 0 ? `: ${table.fields.map((f) => f.name).join(', ')}` : ''}. It cannot be undone.
        </>
      }
      confirm={`Delete table ${table.name}`}
      run={() => api.deleteTable(table.id)}
      onClose={onClose}
      onDone={onDone}
    />
  );
}
