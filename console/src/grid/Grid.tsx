import { type ClipboardEvent, type KeyboardEvent, memo, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
import { type ColumnDef, type RowSelectionState, getCoreRowModel, useReactTable } from '@tanstack/react-table';
import { useVirtualizer } from '@tanstack/react-virtual';
import { type Api, ApiError, type BatchOperation, type Field, type Row, type Table } from '../api.ts';
import { detailTarget } from '../error-details.ts';
import { FIELD_TYPES, editableAsText, textValue, valueText } from '../field-types.ts';
import { parseTsv, toTsv } from '../tsv.ts';
import { CellValue } from './Cell.tsx';
import { type SortKey, cycleSort, toggleNulls } from './sort.ts';
import type { useRows } from './useRows.ts';

const ROW_HEIGHT = 36;
/** Columns before the fields: the row's checkbox, its id. */
const LEAD = 2;
/** Load the next page when the last drawn row is this close to the last held one. */
const AHEAD = 60;

interface Pos {
  r: number;
  c: number;
}

interface CellError {
  message: string;
  text: string;
}

export interface GridProps {
  api: Api;
  table: Table;
  data: ReturnType<typeof useRows>;
  sort: SortKey[];
  onSort: (keys: SortKey[]) => void;
  selection: RowSelectionState;
  onSelection: (s: RowSelectionState) => void;
  /** Why the key may not change rows (no rows:update on the table), or null: then no cell is edited, emptied or pasted into. */
  refusedEdit: string | null;
  /** Why the key may not add rows (no rows:create), or null: a pasted block past the last row would add them. */
  refusedAdd: string | null;
  /** The id of the note saying why the grid is read only. */
  readOnlyNote?: string;
  onOpenRow: (row: Row) => void;
  onOpenLink: (field: Field, id: string) => void;
  onMessage: (text: string) => void;
  onError: (err: unknown) => void;
}

interface Editing {
  pos: Pos;
  rowId: string;
  text: string;
  base: string;
}

const errorKey = (rowId: string, code: string) => `${rowId}\u0000${code}`;

/**
 * The grid (ARIA grid pattern): a header row of sortable columns, then the rows, drawn only where
 * the view is (TanStack Virtual) and read page by page as it scrolls. One cell is active and holds
 * the focus (roving tabindex); arrows, Home/End, Page Up/Down move it, Shift extends a block,
 * Enter or typing edits, Escape cancels, Delete empties, Space selects the row, Ctrl+C copies the
 * block as tab-separated text, Ctrl+V writes a pasted block in one request. For a key that may not
 * change the table's rows the grid is read only (aria-readonly): an edit, a Delete or a paste says
 * why instead of sending what the service would refuse.
 */
export function Grid({ api, table, data, sort, onSort, selection, onSelection, refusedEdit, refusedAdd, readOnlyNote, onOpenRow, onOpenLink, onMessage, onError }: GridProps) {
  const { rows, nextUrl, loadMore, replace } = data;
  const fields = table.fields;
  const colCount = LEAD + fields.length;
  const scrollRef = useRef<HTMLDivElement>(null);
  const [active, setActive] = useState<Pos>({ r: 0, c: LEAD });
  const [anchor, setAnchor] = useState<Pos | null>(null);
  /** The cell being edited: its row's id, the text typed, and the value's text when the edit began (to tell a change made meanwhile). */
  const [editing, setEditing] = useState<Editing | null>(null);
  const [errors, setErrors] = useState<Map<string, CellError>>(new Map());
  const [pending, setPending] = useState<Map<string, string>>(new Map());
  const focusWanted = useRef(false);

  const columns = useMemo<ColumnDef<Row>[]>(
    () => [
      { id: '_select', header: 'Select', size: 44 },
      { id: 'id', header: 'Id', size: 170, accessorFn: (r) => r.id },
      ...fields.map((f) => ({ id: f.code, header: f.name, size: f.type === 'record' || f.type === 'list' ? 240 : 180, accessorFn: (r: Row) => r.values[f.code] })),
    ],
    [fields],
  );
  const model = useReactTable({
    data: rows,
    columns,
    getCoreRowModel: getCoreRowModel(),
    getRowId: (r) => r.id,
    state: { rowSelection: selection },
    enableRowSelection: true,
    onRowSelectionChange: (u) => onSelection(typeof u === 'function' ? u(selection) : u),
  });
  const modelRows = model.getRowModel().rows;
  const template = model.getAllLeafColumns().map((c) => `${c.getSize()}px`).join(' ');

  const virtual = useVirtualizer({
    count: rows.length + (nextUrl ? 1 : 0),
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 12,
  });
  const items = virtual.getVirtualItems();
  const last = items.length > 0 ? items[items.length - 1].index : 0;
  useEffect(() => {
    if (nextUrl && last >= rows.length - AHEAD) loadMore();
  }, [last, rows.length, nextUrl, loadMore]);

  // The active cell takes the focus after a move made from the keyboard or a click (as soon as it is drawn, before the next key).
  useLayoutEffect(() => {
    if (!focusWanted.current || editing) return;
    const cell = scrollRef.current?.querySelector<HTMLElement>(`[data-pos="${active.r}:${active.c}"]`);
    if (cell) {
      cell.focus({ preventScroll: false });
      focusWanted.current = false;
    }
  });

  const clampRow = (r: number) => Math.max(0, Math.min(rows.length - 1, r));
  const clampCol = (c: number) => Math.max(0, Math.min(colCount - 1, c));

  function moveTo(pos: Pos, extend = false) {
    const to = { r: clampRow(pos.r), c: clampCol(pos.c) };
    setAnchor(extend ? (anchor ?? active) : null);
    setActive(to);
    focusWanted.current = true;
    virtual.scrollToIndex(to.r, { align: 'auto' });
  }

  /** The block of cells from the anchor to the active cell (the active cell alone without one). */
  function block(): { r0: number; r1: number; c0: number; c1: number } {
    const a = anchor ?? active;
    return { r0: Math.min(a.r, active.r), r1: Math.max(a.r, active.r), c0: Math.min(a.c, active.c), c1: Math.max(a.c, active.c) };
  }

  const fieldAt = (c: number): Field | undefined => fields[c - LEAD];

  function startEdit(pos: Pos, text?: string) {
    const field = fieldAt(pos.c);
    const row = rows[pos.r];
    if (!field || !row || !editableAsText(field)) return;
    if (refusedEdit) return onMessage(refusedEdit);
    const held = errors.get(errorKey(row.id, field.code));
    const base = valueText(field, row.values[field.code]);
    setEditing({ pos, rowId: row.id, text: text ?? held?.text ?? base, base });
  }

  function showErrors(err: unknown, rowOf: (index: number | null) => Row | undefined, texts: (row: Row, code: string) => string): boolean {
    if (!(err instanceof ApiError) || err.status !== 400) return false;
    const next = new Map(errors);
    let shown = false;
    for (const d of err.details) {
      const target = detailTarget(d.path);
      const row = target && rowOf(target.index ?? err.index ?? null);
      if (!target || !row) continue;
      next.set(errorKey(row.id, target.field), { message: d.message, text: texts(row, target.field) });
      shown = true;
    }
    setErrors(next);
    return shown;
  }

  async function write(pos: Pos, text: string, edit?: { rowId: string; base: string }) {
    const field = fieldAt(pos.c);
    const row = edit ? rows.find((r) => r.id === edit.rowId) : rows[pos.r];
    if (!field || !row) return;
    const key = errorKey(row.id, field.code);
    const now = valueText(field, row.values[field.code]);
    if (!errors.has(key) && text === now) return;
    if (edit && edit.base !== now) {
      // Another client changed this value while it was being edited: shown on the cell, not written over unseen.
      setErrors((e) => new Map(e).set(key, { message: `Changed meanwhile to “${now}” by another write; yours was not saved. Edit again to save it over that.`, text }));
      return;
    }
    setPending((p) => new Map(p).set(key, text));
    try {
      const saved = await api.updateRow(table.id, row.id, { [field.code]: textValue(field, text) });
      replace([saved]);
      setErrors((e) => {
        const n = new Map(e);
        n.delete(key);
        return n;
      });
    } catch (err) {
      if (!showErrors(err, () => row, () => text)) onError(err);
    } finally {
      setPending((p) => {
        const n = new Map(p);
        n.delete(key);
        return n;
      });
    }
  }

  function commit(move: Pos | null) {
    if (!editing) return;
    const { pos, text, rowId, base } = editing;
    setEditing(null);
    void write(pos, text, { rowId, base });
    if (move) moveTo(move);
    else focusWanted.current = true;
  }

  function onKeyDown(e: KeyboardEvent<HTMLDivElement>) {
    if (editing) return; // the editor handles its own keys
    if ((e.target as HTMLElement).closest('[role="columnheader"]')) return;
    const { r, c } = active;
    const shift = e.shiftKey;
    const ctrl = e.ctrlKey || e.metaKey;
    const keys: Record<string, () => void> = {
      ArrowDown: () => moveTo({ r: r + 1, c }, shift),
      ArrowUp: () => moveTo({ r: r - 1, c }, shift),
      ArrowRight: () => moveTo({ r, c: c + 1 }, shift),
      ArrowLeft: () => moveTo({ r, c: c - 1 }, shift),
      Home: () => moveTo(ctrl ? { r: 0, c: 0 } : { r, c: 0 }, shift),
      End: () => moveTo(ctrl ? { r: rows.length - 1, c: colCount - 1 } : { r, c: colCount - 1 }, shift),
      PageDown: () => moveTo({ r: r + 10, c }, shift),
      PageUp: () => moveTo({ r: r - 10, c }, shift),
      Enter: () => (c === 1 && rows[r] ? onOpenRow(rows[r]) : startEdit(active)),
      F2: () => startEdit(active),
      Escape: () => setAnchor(null),
      ' ': () => rows[r] && modelRows[r]?.toggleSelected(),
      Delete: () => {
        if (refusedEdit) return onMessage(refusedEdit);
        const b = block();
        for (let rr = b.r0; rr <= b.r1; rr++) for (let cc = Math.max(b.c0, LEAD); cc <= b.c1; cc++) if (fieldAt(cc) && editableAsText(fieldAt(cc)!)) void write({ r: rr, c: cc }, '');
      },
    };
    keys.Backspace = keys.Delete;
    const act = keys[e.key];
    if (act) {
      e.preventDefault();
      act();
      return;
    }
    if (e.key.length === 1 && !ctrl && !e.altKey && fieldAt(c)) {
      e.preventDefault();
      startEdit(active, e.key);
    }
  }

  function onCopy(e: ClipboardEvent<HTMLDivElement>) {
    if (editing) return;
    const b = block();
    const lines: string[][] = [];
    for (let r = b.r0; r <= b.r1; r++) {
      const row = rows[r];
      if (!row) continue;
      const line: string[] = [];
      for (let c = Math.max(b.c0, 1); c <= b.c1; c++) line.push(c === 1 ? row.id : valueText(fieldAt(c)!, row.values[fieldAt(c)!.code]));
      lines.push(line);
    }
    e.clipboardData.setData('text/plain', toTsv(lines));
    e.preventDefault();
    onMessage(`Copied ${lines.length} ${lines.length === 1 ? 'row' : 'rows'} of cells.`);
  }

  async function onPaste(e: ClipboardEvent<HTMLDivElement>) {
    if (editing) return;
    const text = e.clipboardData.getData('text/plain');
    e.preventDefault();
    const lines = parseTsv(text);
    if (lines.length === 0) return;
    const c0 = Math.max(active.c, LEAD);
    const r0 = rows.length === 0 ? 0 : active.r;
    const operations: BatchOperation[] = [];
    const targets: (Row | null)[] = [];
    const pastedText = new Map<string, string>();
    for (const [i, line] of lines.entries()) {
      const values: Record<string, unknown> = {};
      for (const [j, cell] of line.entries()) {
        const field = fieldAt(c0 + j);
        if (!field || !editableAsText(field)) continue;
        values[field.code] = textValue(field, cell);
      }
      const row = rows[r0 + i];
      if (row) {
        operations.push({ type: 'update', tableId: table.id, id: row.id, values });
        for (const [j, cell] of line.entries()) if (fieldAt(c0 + j)) pastedText.set(errorKey(row.id, fieldAt(c0 + j)!.code), cell);
        targets.push(row);
      } else if (nextUrl) {
        onError(new Error('The pasted block reaches past the rows loaded so far: scroll to the end of the table first, then paste again.'));
        return;
      } else {
        operations.push({ type: 'create', tableId: table.id, values });
        targets.push(null);
      }
    }
    // Refused before it is sent when the key lacks what the block would do (a 403 would write nothing either).
    const refused = (operations.some((o) => o.type === 'update') && refusedEdit) || (operations.some((o) => o.type === 'create') && refusedAdd);
    if (refused) {
      onError(new Error(`Nothing was pasted. ${refused}`));
      return;
    }
    try {
      const result = await api.batch(operations);
      const updated = result.data.filter((d, i) => targets[i] !== null && d.row).map((d) => d.row as Row);
      const created = result.data.filter((_d, i) => targets[i] === null).map((d) => d.row as Row);
      replace(updated, created);
      setErrors((old) => {
        const n = new Map(old);
        for (const row of updated) for (const f of fields) n.delete(errorKey(row.id, f.code));
        return n;
      });
      onMessage(`Pasted ${lines.length} ${lines.length === 1 ? 'row' : 'rows'}: ${updated.length} updated, ${created.length} added.`);
    } catch (err) {
      const shown = showErrors(err, (i) => (i === null ? undefined : (targets[i] ?? undefined)), (row, code) => pastedText.get(errorKey(row.id, code)) ?? '');
      if (!shown) onError(err);
      else onError(new Error(`Nothing was pasted: ${(err as Error).message}`));
    }
  }

  const actions = useRef<RowActions>(null as unknown as RowActions);
  actions.current = {
    moveTo,
    toggle: (index) => modelRows[index]?.toggleSelected(),
    openRow: onOpenRow,
    openLink: onOpenLink,
    startEdit: (pos) => startEdit(pos),
    commit,
    cancelEdit: () => {
      setEditing(null);
      focusWanted.current = true;
    },
    editText: (text) => setEditing((e) => e && { ...e, text }),
  };

  const sorted = new Map(sort.map((k, i) => [k.key, { ...k, rank: i + 1 }]));
  const b = block();
  const allSelected = rows.length > 0 && rows.every((r) => selection[r.id]);

  function header(id: string, label: string, sortable: boolean, colIndex: number) {
    const s = sorted.get(id);
    return (
      <div role="columnheader" aria-colindex={colIndex + 1} key={id} aria-sort={s && sort.length === 1 ? (s.direction === 'asc' ? 'ascending' : 'descending') : undefined} className="head-cell">
        {sortable ? (
          <>
            <button type="button" className="sort" onClick={(e) => onSort(cycleSort(sort, id, e.shiftKey))} title="Sort (Shift adds to the sort)">
              {label}
              {s && <span className="sort-mark">{s.direction === 'asc' ? ' ▲' : ' ▼'}{sort.length > 1 ? s.rank : ''}</span>}
              {s && <span className="visually-hidden">{`, sorted ${s.direction === 'asc' ? 'ascending' : 'descending'}`}</span>}
            </button>
            {s && (
              <button type="button" className="nulls" onClick={() => onSort(toggleNulls(sort, id))} aria-label={`Empty values of ${label}: ${s.nulls === 'nullsLast' ? 'last' : 'first'}`}>
                {s.nulls === 'nullsLast' ? '∅ last' : '∅ first'}
              </button>
            )}
          </>
        ) : (
          <span>{label}</span>
        )}
      </div>
    );
  }

  return (
    <div
      ref={scrollRef}
      role="grid"
      aria-label={`Rows of ${table.name}`}
      aria-rowcount={nextUrl ? -1 : rows.length + 1}
      aria-colcount={colCount}
      aria-multiselectable="true"
      aria-readonly={refusedEdit ? true : undefined}
      aria-describedby={readOnlyNote}
      className="grid"
      onKeyDown={onKeyDown}
      onCopy={onCopy}
      onPaste={(e) => void onPaste(e)}
    >
      <div role="rowgroup" className="grid-head">
        <div role="row" aria-rowindex={1} className="grid-row" style={{ gridTemplateColumns: template }}>
          <div role="columnheader" aria-colindex={1} className="head-cell">
            <input type="checkbox" aria-label="Select all loaded rows" checked={allSelected} onChange={() => onSelection(allSelected ? {} : Object.fromEntries(rows.map((r) => [r.id, true])))} />
          </div>
          {header('id', 'Id', true, 1)}
          {fields.map((f, i) => header(f.code, f.name, FIELD_TYPES[f.type].sortable, LEAD + i))}
        </div>
      </div>
      <div role="rowgroup" className="grid-body" style={{ height: virtual.getTotalSize() }}>
        {items.map((item) => {
          const row = rows[item.index];
          if (!row) {
            const style = { transform: `translateY(${item.start}px)`, gridTemplateColumns: template, height: ROW_HEIGHT };
            return (
              <div role="row" key="loading" aria-rowindex={item.index + 2} className="grid-row loading" style={style}>
                <div role="gridcell" aria-colindex={1} aria-colspan={colCount} className="cell">Loading more rows…</div>
              </div>
            );
          }
          const inRows = anchor !== null && item.index >= b.r0 && item.index <= b.r1;
          return (
            <GridRow
              key={row.id}
              row={row}
              index={item.index}
              start={item.start}
              template={template}
              fields={fields}
              selected={!!selection[row.id]}
              activeCol={active.r === item.index ? active.c : -1}
              blockFrom={inRows ? b.c0 : -1}
              blockTo={inRows ? b.c1 : -1}
              editing={editing && editing.pos.r === item.index ? editing : null}
              errors={errors}
              pending={pending}
              actions={actions}
            />
          );
        })}
      </div>
    </div>
  );
}

/** What a row does, through the grid: kept in a ref, so a row's props stay equal from one render to the next. */
interface RowActions {
  moveTo: (pos: Pos, extend: boolean) => void;
  toggle: (index: number) => void;
  openRow: (row: Row) => void;
  openLink: (field: Field, id: string) => void;
  startEdit: (pos: Pos) => void;
  commit: (move: Pos | null) => void;
  cancelEdit: () => void;
  editText: (text: string) => void;
}

interface GridRowProps {
  row: Row;
  index: number;
  start: number;
  template: string;
  fields: Field[];
  selected: boolean;
  /** The active cell's column when it is in this row, else -1. */
  activeCol: number;
  /** The chosen block's columns when it spans this row, else -1. */
  blockFrom: number;
  blockTo: number;
  /** The edit under way when it is in this row. */
  editing: Editing | null;
  errors: Map<string, CellError>;
  pending: Map<string, string>;
  actions: { current: RowActions };
}

/**
 * One row of the grid. Memoized: as the grid scrolls, the rows still in view keep equal props and
 * are not drawn again; only the rows scrolled into view are (re-drawing every row in view on every
 * scroll event cost more than a frame).
 */
const GridRow = memo(function GridRow({ row, index, start, template, fields, selected, activeCol, blockFrom, blockTo, editing, errors, pending, actions }: GridRowProps) {
  const style = { transform: `translateY(${start}px)`, gridTemplateColumns: template, height: ROW_HEIGHT };
  const inBlock = (c: number) => c >= blockFrom && c <= blockTo && blockFrom >= 0;
  const cellProps = (c: number) => ({
    role: 'gridcell',
    'aria-colindex': c + 1,
    'data-pos': `${index}:${c}`,
    tabIndex: activeCol === c ? 0 : -1,
    onMouseDown: (e: React.MouseEvent) => {
      if ((e.target as HTMLElement).closest('input, button, select, textarea, a')) return;
      actions.current.moveTo({ r: index, c }, e.shiftKey);
    },
  });
  return (
    <div role="row" aria-rowindex={index + 2} aria-selected={selected} className={`grid-row${selected ? ' selected' : ''}`} style={style}>
      <div {...cellProps(0)} className="cell select-cell">
        <input type="checkbox" tabIndex={-1} aria-label={`Select row ${row.id}`} checked={selected} onChange={() => actions.current.toggle(index)} />
      </div>
      <div {...cellProps(1)} className={`cell id-cell${inBlock(1) ? ' in-block' : ''}`}>
        <button type="button" tabIndex={-1} className="open-row" aria-label={`Open row ${row.id}`} onClick={() => actions.current.openRow(row)}>
          ⤢
        </button>
        <span>{row.id}</span>
      </div>
      {fields.map((f, i) => {
        const c = LEAD + i;
        const key = errorKey(row.id, f.code);
        const error = errors.get(key);
        const isEditing = editing !== null && editing.pos.c === c;
        const waiting = pending.get(key);
        const errorId = `err-${index}-${c}`;
        return (
          <div
            {...cellProps(c)}
            key={f.code}
            className={`cell type-${f.type}${error ? ' invalid' : ''}${inBlock(c) ? ' in-block' : ''}`}
            aria-invalid={error ? true : undefined}
            aria-busy={waiting !== undefined ? true : undefined}
            aria-describedby={error ? errorId : undefined}
            onDoubleClick={() => actions.current.startEdit({ r: index, c })}
          >
            {isEditing ? (
              <CellEditor
                field={f}
                rowId={row.id}
                meanwhile={valueText(f, row.values[f.code]) !== editing.base ? valueText(f, row.values[f.code]) : null}
                text={editing.text}
                onText={(t) => actions.current.editText(t)}
                onCommit={(dir) => actions.current.commit(dir === 'down' ? { r: index + 1, c } : dir === 'right' ? { r: index, c: c + 1 } : dir === 'left' ? { r: index, c: c - 1 } : null)}
                onCancel={() => actions.current.cancelEdit()}
              />
            ) : waiting !== undefined ? (
              <span className="pending">{waiting}</span>
            ) : error ? (
              <>
                <span className="attempt">{error.text}</span>
                <span className="cell-error" id={errorId}>{error.message}</span>
              </>
            ) : (
              <CellValue field={f} value={row.values[f.code]} onOpenLink={(field, id) => actions.current.openLink(field, id)} />
            )}
          </div>
        );
      })}
    </div>
  );
});

type Direction = 'down' | 'right' | 'left' | 'stay';

/** The editor in a cell: a list of choices for a select or a boolean, else a line of text. */
function CellEditor({ field, rowId, meanwhile, text, onText, onCommit, onCancel }: { field: Field; rowId: string; meanwhile: string | null; text: string; onText: (t: string) => void; onCommit: (d: Direction) => void; onCancel: () => void }) {
  const label = `${field.name}, row ${rowId}`;
  const done = useRef(false);
  // Focused once drawn (not the autofocus attribute, which a browser honours only as a page loads).
  const ref = useRef<HTMLInputElement & HTMLSelectElement>(null);
  useLayoutEffect(() => {
    ref.current?.focus();
    if (ref.current instanceof HTMLInputElement) ref.current.setSelectionRange(ref.current.value.length, ref.current.value.length);
  }, []);
  const keys = (e: KeyboardEvent<HTMLElement>) => {
    e.stopPropagation();
    if (e.key === 'Enter') {
      e.preventDefault();
      done.current = true;
      onCommit('down');
    } else if (e.key === 'Tab') {
      e.preventDefault();
      done.current = true;
      onCommit(e.shiftKey ? 'left' : 'right');
    } else if (e.key === 'Escape') {
      e.preventDefault();
      done.current = true;
      onCancel();
    }
  };
  const blur = () => {
    if (!done.current) onCommit('stay');
  };
  const noteId = `meanwhile-${rowId}-${field.code}`;
  const note = meanwhile !== null && (
    <span className="cell-error" id={noteId} role="status">
      Changed meanwhile to “{meanwhile}”
    </span>
  );
  const described = meanwhile !== null ? noteId : undefined;
  if (field.type === 'select' || field.type === 'boolean') {
    const choices = field.type === 'boolean' ? ['true', 'false'] : ((field.options.choices as string[]) ?? []);
    return (
      <>
      <select ref={ref} aria-label={label} aria-describedby={described} value={text} onChange={(e) => onText(e.target.value)} onKeyDown={keys} onBlur={blur}>
        <option value="">(empty)</option>
        {!choices.includes(text) && text !== '' && <option value={text}>{text}</option>}
        {choices.map((c) => (
          <option key={c} value={c}>{c}</option>
        ))}
      </select>
      {note}
      </>
    );
  }
  return (
    <>
      <input ref={ref} aria-label={label} aria-describedby={described} value={text} onChange={(e) => onText(e.target.value)} onKeyDown={keys} onBlur={blur} spellCheck={false} />
      {note}
    </>
  );
}
