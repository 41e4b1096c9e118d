import type { ReactNode } from 'react';
import { ErrorBox } from './ErrorBox.tsx';

/** One column of an item table: its header, and what a cell shows of an item. */
export interface Column<T> {
  header: string;
  cell: (item: T) => ReactNode;
}

/** Items read a page at a time (admin/resources.ts's useList), or all at once (the tables). */
export interface Items<T> {
  /** null while the first page loads. */
  items: T[] | null;
  error: unknown;
  more?: boolean;
  loadMore?: () => void;
}

/**
 * A list of items as a table (the tables, API keys, flows, deliveries, environment variables,
 * members): its error, "Loading…" until the first page, a sentence when there is none, then one
 * row per item (the first column its row header, then an Actions column when there are actions),
 * and Load more while pages remain.
 */
export function ItemTable<T extends { id: string }>({
  list,
  caption,
  things,
  empty,
  columns,
  actions,
  rowClass,
}: {
  list: Items<T>;
  caption: string;
  /** What the items are, for "Loading …": 'flows'. */
  things: string;
  /** What is said when there is none. */
  empty: ReactNode;
  columns: Column<T>[];
  actions?: (item: T) => ReactNode;
  rowClass?: (item: T) => string;
}) {
  return (
    <>
      <ErrorBox error={list.error} />
      {list.items === null ? (
        !list.error && <p role="status">Loading {things}…</p>
      ) : list.items.length === 0 ? (
        <p>{empty}</p>
      ) : (
        <table className="list">
          <caption className="visually-hidden">{caption}</caption>
          <thead>
            <tr>
              {columns.map((c) => (
                <th key={c.header} scope="col">{c.header}</th>
              ))}
              {actions && <th scope="col">Actions</th>}
            </tr>
          </thead>
          <tbody>
            {list.items.map((item) => (
              <tr key={item.id} className={rowClass?.(item)}>
                {columns.map((c, i) => (i === 0 ? <th key={c.header} scope="row">{c.cell(item)}</th> : <td key={c.header}>{c.cell(item)}</td>))}
                {actions && <td className="actions">{actions(item)}</td>}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {list.more && list.loadMore && (
        <button type="button" onClick={list.loadMore}>
          Load more
        </button>
      )}
    </>
  );
}
