import { useCallback, useEffect, useRef, useState } from 'react';
import { type Api, ApiError, type Table } from '../api.ts';

/** The generic resources' routes (docs/api.md, Generic resources), as the administration uses them. */

export interface ListQuery {
  filter?: Record<string, unknown>;
  sorting?: Record<string, 'asc' | 'desc'>;
}

const PAGE = 100;
const path = (resource: string, id?: string) => `/api/${resource}${id === undefined ? '' : `/${encodeURIComponent(id)}`}`;

export function listItems<T>(api: Api, resource: string, query: ListQuery, offset: number) {
  const q = new URLSearchParams({ paging: JSON.stringify({ limit: PAGE, offset }) });
  if (query.filter) q.set('filter', JSON.stringify(query.filter));
  if (query.sorting) q.set('sorting', JSON.stringify(query.sorting));
  return api.request<{ data: T[]; pagination: { nextOffset: number | null } }>('GET', `${path(resource)}?${q}`);
}

/** A create (no id) or a partial update. */
export const saveItem = <T>(api: Api, resource: string, id: string | null, body: unknown) =>
  api.request<T>(id === null ? 'POST' : 'PUT', path(resource, id ?? undefined), body);

export const deleteItem = (api: Api, resource: string, id: string) => api.request<unknown>('DELETE', path(resource, id));

export interface List<T> {
  items: T[] | null;
  more: boolean;
  error: unknown;
  reload: () => void;
  loadMore: () => void;
  /** One item as an answer had it (after a retry, a toggle). */
  put: (item: T) => void;
}

/** A resource's items, a page at a time (Load more), for a key that may read them (`enabled`). */
export function useList<T extends { id: string }>(api: Api, resource: string, query: ListQuery, enabled: boolean, onSignedOut: () => void): List<T> {
  const [items, setItems] = useState<T[] | null>(null);
  const [next, setNext] = useState<number | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [round, setRound] = useState(0);
  const key = JSON.stringify(query);

  const signOut = useRef(onSignedOut);
  signOut.current = onSignedOut;
  const fail = useCallback((err: unknown) => (err instanceof ApiError && err.status === 401 ? signOut.current() : setError(err)), []);

  useEffect(() => {
    if (!enabled) return;
    let live = true;
    listItems<T>(api, resource, JSON.parse(key) as ListQuery, 0).then((page) => {
      if (!live) return;
      setItems(page.data);
      setNext(page.pagination.nextOffset);
      setError(null);
    }, (err) => live && fail(err));
    return () => {
      live = false;
    };
  }, [api, resource, key, enabled, round, fail]);

  const reload = useCallback(() => setRound((r) => r + 1), []);
  return {
    items,
    more: next !== null,
    error,
    reload,
    loadMore: () => {
      if (next === null) return;
      listItems<T>(api, resource, JSON.parse(key) as ListQuery, next).then((page) => {
        setItems((old) => [...(old ?? []), ...page.data]);
        setNext(page.pagination.nextOffset);
      }, fail);
    },
    put: (item) => setItems((old) => old?.map((x) => (x.id === item.id ? item : x)) ?? null),
  };
}

/** The tables the key may see, to choose from: undefined while they load, null when the key may not list them (no schema:read). */
export function useTables(api: Api): Table[] | null | undefined {
  const [tables, setTables] = useState<Table[] | null | undefined>(undefined);
  useEffect(() => {
    let live = true;
    api.tables().then((t) => live && setTables(t), () => live && setTables(null));
    return () => {
      live = false;
    };
  }, [api]);
  return tables;
}

/** A table's name for a stored table id (its code, else its name, else the id as it is). */
export function tableLabel(tables: Table[] | null | undefined, id: string): string {
  if (id === '*') return 'every table';
  const t = tables?.find((x) => x.id === id);
  return t ? (t.code ?? t.name) : id;
}
