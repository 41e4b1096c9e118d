import { useCallback, useEffect, useMemo, useState } from 'react';
import type { RowSelectionState } from '@tanstack/react-table';
import { type Api, ApiError, type Field, type Row, type Table } from '../api.ts';
import { Dialog } from '../Dialog.tsx';
import { ErrorBox } from '../ErrorBox.tsx';
import { type Place, go } from '../location.ts';
import { emptyGroup, fromApiFilter } from '../filter-model.ts';
import { TableDialog } from '../tables/TableDialog.tsx';
import { ChartPanel } from '../insight/ChartPanel.tsx';
import { FilterBuilder } from './FilterBuilder.tsx';
import { ExportDialog, ImportDialog } from './ImportExport.tsx';
import { Grid } from './Grid.tsx';
import { RowPanel } from './RowPanel.tsx';
import { parseSort, sortText } from './sort.ts';
import { useLive } from './useLive.ts';
import { useRows } from './useRows.ts';

/** One table: its toolbar, the filter builder, the grid, and the row panel. The view (filter, sort) lives in the URL. */
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
  return <TableView key={table.updatedAt} api={api} table={table} place={place} onTableChanged={loadTable} />;
}

function TableView({ api, table, place, onTableChanged }: { api: Api; table: Table; place: Place; onTableChanged: () => void }) {
  const ref = place.table as string;
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
        <button type="button" onClick={() => setPanel('new')}>Add row</button>
        <button type="button" onClick={() => setConfirmDelete(true)} disabled={selectedIds.length === 0} className="danger">
          Delete selected rows ({selectedIds.length})
        </button>
        <button type="button" aria-expanded={filterOpen} aria-controls="filter-panel" onClick={() => setFilterOpen(!filterOpen)}>
          Filter{place.filter ? ' (on)' : ''}
        </button>
        <button type="button" aria-expanded={chartOpen} onClick={() => setChartOpen(!chartOpen)}>Chart</button>
        <button type="button" onClick={() => setTransfer('import')}>Import</button>
        <button type="button" onClick={() => setTransfer('export')}>Export</button>
        <button type="button" onClick={() => setEditTable(true)}>Edit table</button>
        <button type="button" onClick={data.reload}>Reload</button>
        <span className={`live live-${live}`} role="status" aria-label="Live updates">
          {live === 'live' ? '● Live' : live === 'off' ? 'Not live' : live === 'connecting' ? 'Connecting…' : 'Reconnecting…'}
        </span>
      </div>
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
      {transfer === 'import' && <ImportDialog api={api} table={table} onClose={() => setTransfer(null)} onDone={data.reload} />}
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
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  async function confirm() {
    setBusy(true);
    const done: string[] = [];
    try {
      for (let i = 0; i < ids.length; i += BULK) {
        const chunk = ids.slice(i, i + BULK);
        await api.deleteRows(table.id, chunk);
        done.push(...chunk);
      }
      onDone(done);
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  }
  const shown = ids.slice(0, 10);
  return (
    <Dialog title={`Delete ${ids.length} ${ids.length === 1 ? 'row' : 'rows'}?`} onClose={onClose}>
      <p>
        This deletes {ids.length === 1 ? 'the row' : `${ids.length} rows`} of {table.name}, with their files: {shown.join(', ')}
        {ids.length > shown.length ? ` and ${ids.length - shown.length} more` : ''}. It cannot be undone.
      </p>
      <ErrorBox error={error} />
      <div className="actions">
        <button type="button" className="danger" onClick={confirm} disabled={busy}>Delete {ids.length === 1 ? 'row' : 'rows'}</button>
        <button type="button" onClick={onClose} autoFocus>Cancel</button>
      </div>
    </Dialog>
  );
}
