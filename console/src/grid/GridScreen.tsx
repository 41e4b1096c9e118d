import { useCallback, useEffect, useMemo, useState } from 'react';
import type { RowSelectionState } from '@tanstack/react-table';
import { type Api, ApiError, type Field, type Row, type Table } from '../api.ts';
import { ConfirmDialog } from '../ConfirmDialog.tsx';
import { ErrorBox } from '../ErrorBox.tsx';
import type { ApiKey } from '../scopes.ts';
import { type Place, go } from '../location.ts';
import { WithMe, useRights } from '../rights.tsx';
import { emptyGroup, fromApiFilter } from '../filter-model.ts';
import { TableDialog } from '../tables/TableDialog.tsx';
import { ChartPanel } from '../insight/ChartPanel.tsx';
import { FilterBuilder } from './FilterBuilder.tsx';
import { ExportDialog, ImportDialog } from './ImportExport.tsx';
import { Grid } from './Grid.tsx';
import { RowPanel } from './RowPanel.tsx';
import { ROW_NEEDS } from './row-needs.ts';
import { parseSort, sortText } from './sort.ts';
import { useLive } from './useLive.ts';
import { useRows } from './useRows.ts';

/**
 * One table: its toolbar, the filter builder, the grid, and the row panel. The view (filter, sort)
 * lives in the URL. What the key may not do on the table is turned off, saying why (rights.tsx).
 */
export function GridScreen({ api, place, onSignedOut }: { api: Api; place: Place; onSignedOut: () => void }) {
  const [table, setTable] = useState<Table | null>(null);
  const [loadError, setLoadError] = useState<unknown>(null);
  const ref = place.table as string;

  const loadTable = useCallback(() => {
    api.table(ref).then(setTable, (err) => {
      if (err instanceof ApiError && err.status === 401) onSignedOut();
      else setLoadError(err);
    });
  }, [api, ref, onSignedOut]);
  useEffect(loadTable, [loadTable]);

  if (loadError) {
    return (
      <section aria-labelledby="grid-title">
        <h1 id="grid-title">Table {ref}</h1>
        <ErrorBox error={loadError} />
      </section>
    );
  }
  if (!table) return <p role="status">Loading table…</p>;
  return (
    <WithMe api={api} onSignedOut={onSignedOut}>
      {(me) => <TableView key={table.updatedAt} api={api} me={me} table={table} place={place} onTableChanged={loadTable} />}
    </WithMe>
  );
}

function TableView({ api, me, table, place, onTableChanged }: { api: Api; me: ApiKey; table: Table; place: Place; onTableChanged: () => void }) {
  const ref = place.table as string;
  const rights = useRights(me, table, ROW_NEEDS);
  const data = useRows(api, ref, place.filter, place.sort);
  const live = useLive(api, table.id, place.filter, data.applyChange);
  const sort = useMemo(() => parseSort(place.sort), [place.sort]);
  const [selection, setSelection] = useState<RowSelectionState>({});
  const [panel, setPanel] = useState<Row | 'new' | null>(null);
  const [filterOpen, setFilterOpen] = useState(place.filter !== null);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [chartOpen, setChartOpen] = useState(false);
  const [transfer, setTransfer] = useState<'import' | 'export' | null>(null);
  const [editTable, setEditTable] = useState(false);
  const [message, setMessage] = useState('');
  const [error, setError] = useState<unknown>(null);

  const initialFilter = useMemo(() => {
    try {
      return place.filter ? fromApiFilter(JSON.parse(place.filter)) : emptyGroup();
    } catch {
      return emptyGroup();
    }
  }, [place.filter]);

  /** A linked row, opened in its own table's grid (filtered to it). */
  const openLink = (field: Field, id: string) => go({ table: String(field.options.table), filter: JSON.stringify({ id: { _eq: id } }), sort: null });
  const selectedIds = Object.keys(selection).filter((id) => selection[id]);
  const view = (filter: string | null, sortValue: string | null) => go({ table: ref, filter, sort: sortValue });

  return (
    <section aria-labelledby="grid-title" className="grid-screen">
      <div className="screen-head">
        <h1 id="grid-title">{table.name}</h1>
        {table.code && <code className="table-code">{table.code}</code>}
      </div>
      {table.description && <p className="description">{table.description}</p>}
      <div role="toolbar" aria-label="Table actions" className="toolbar">
        <button type="button" onClick={() => setPanel('new')} {...rights.off('create')}>Add row</button>
        <button type="button" onClick={() => setConfirmDelete(true)} disabled={selectedIds.length === 0} {...rights.off('delete')} className="danger">
          Delete selected rows ({selectedIds.length})
        </button>
        <button type="button" aria-expanded={filterOpen} aria-controls="filter-panel" onClick={() => setFilterOpen(!filterOpen)}>
          Filter{place.filter ? ' (on)' : ''}
        </button>
        <button type="button" aria-expanded={chartOpen} onClick={() => setChartOpen(!chartOpen)}>Chart</button>
        <button type="button" onClick={() => setTransfer('import')} {...rights.off('import', 'create')}>Import</button>
        <button type="button" onClick={() => setTransfer('export')} {...rights.off('export')}>Export</button>
        <button type="button" onClick={() => setEditTable(true)} {...rights.off('schema')}>Edit table</button>
        <button type="button" onClick={data.reload}>Reload</button>
        <span className={`live live-${live}`} role="status" aria-label="Live updates">
          {live === 'live' ? '● Live' : live === 'off' ? 'Not live' : live === 'connecting' ? 'Connecting…' : 'Reconnecting…'}
        </span>
      </div>
      {rights.note}
      <div id="filter-panel" hidden={!filterOpen}>
        {filterOpen && (
          <FilterBuilder key={place.filter ?? ''} fields={table.fields} initial={initialFilter} onApply={(f) => view(f ? JSON.stringify(f) : null, place.sort)} />
        )}
      </div>
      {chartOpen && <ChartPanel api={api} table={table} filter={place.filter} />}
      <p role="status" className="status">
        {data.loading ? 'Loading rows…' : `${data.rows.length} ${data.rows.length === 1 ? 'row' : 'rows'}${data.nextUrl ? ' loaded, more below' : ''}.`} {message}
      </p>
      <ErrorBox error={data.error ?? error} />
      <Grid
        api={api}
        table={table}
        data={data}
        sort={sort}
        onSort={(keys) => view(place.filter, sortText(keys))}
        selection={selection}
        onSelection={setSelection}
        refusedEdit={rights.refused('update')}
        refusedAdd={rights.refused('create')}
        readOnlyNote={rights.refused('update') ? rights.reasonId('update') : undefined}
        onOpenRow={setPanel}
        onOpenLink={openLink}
        onMessage={(m) => {
          setMessage(m);
          setError(null);
        }}
        onError={setError}
      />
      {!data.loading && data.rows.length === 0 && !data.error && <p>No rows{place.filter ? ' match this filter' : ' yet'}.</p>}
      {panel && (
        <RowPanel
          api={api}
          me={me}
          table={table}
          row={panel === 'new' ? null : panel}
          onOpenLink={(f, id) => {
            setPanel(null);
            openLink(f, id);
          }}
          onClose={() => setPanel(null)}
          onSaved={(row, created) => {
            setPanel(null);
            if (created) {
              setMessage(`Row ${row.id} added.`);
              data.reload();
            } else {
              data.replace([row]);
              setMessage(`Row ${row.id} saved.`);
            }
          }}
        />
      )}
      {transfer === 'import' && <ImportDialog api={api} me={me} table={table} onClose={() => setTransfer(null)} onDone={data.reload} />}
      {transfer === 'export' && <ExportDialog api={api} table={table} filter={place.filter} sort={place.sort} onClose={() => setTransfer(null)} />}
      {confirmDelete && (
        <DeleteRowsDialog
          api={api}
          table={table}
          ids={selectedIds}
          onClose={() => setConfirmDelete(false)}
          onDone={(ids) => {
            setConfirmDelete(false);
            setSelection({});
            data.replace([], [], ids);
            setMessage(`Deleted ${ids.length} ${ids.length === 1 ? 'row' : 'rows'}.`);
          }}
        />
      )}
      {editTable && (
        <TableDialog
          api={api}
          table={table}
          onClose={() => setEditTable(false)}
          onDone={(t) => {
            setEditTable(false);
            if ((t.code ?? t.id) !== ref) go({ table: t.code ?? t.id, filter: null, sort: null });
            else onTableChanged();
          }}
        />
      )}
    </section>
  );
}

/** The bulk limit of one request (CONTRACT §7). */
const BULK = 1000;

function DeleteRowsDialog({ api, table, ids, onClose, onDone }: { api: Api; table: Table; ids: string[]; onClose: () => void; onDone: (ids: string[]) => void }) {
  const shown = ids.slice(0, 10);
  return (
    <ConfirmDialog
      title={`Delete ${ids.length} ${ids.length === 1 ? 'row' : 'rows'}?`}
      note={`This deletes ${ids.length === 1 ? 'the row' : `${ids.length} rows`} of ${table.name}, with their files: ${shown.join(', ')}${ids.length > shown.length ? ` and ${ids.length - shown.length} more` : ''}. It cannot be undone.`}
      confirm={`Delete ${ids.length === 1 ? 'row' : 'rows'}`}
      run={async () => {
        for (let i = 0; i < ids.length; i += BULK) await api.deleteRows(table.id, ids.slice(i, i + BULK));
      }}
      onClose={onClose}
      onDone={() => onDone(ids)}
    />
  );
}
