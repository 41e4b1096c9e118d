import { useCallback, useEffect, useRef, useState } from 'react';
import { type Api, ApiError, type Change, type Row } from '../api.ts';

/** How many rows a page asks for: the API's most (200), so a long scroll makes few requests. */
export const PAGE_SIZE = 200;

export interface RowsState {
  rows: Row[];
  /** The next page's URL (null on the last page). */
  nextUrl: string | null;
  loading: boolean;
  error: ApiError | Error | null;
  done: boolean;
}

/**
 * The rows of one view, read page by page as they are needed: the first page when the view opens
 * (so a table of a million rows opens as fast as one of a hundred), then the page `nextUrl` names
 * whenever the grid scrolls near the last row it holds (keyset paging: each page costs the same).
 */
export function useRows(api: Api, table: string, filter: string | null, sort: string | null) {
  const [state, setState] = useState<RowsState>({ rows: [], nextUrl: null, loading: true, error: null, done: false });
  const generation = useRef(0);
  const inFlight = useRef(false);

  const reload = useCallback(() => {
    const mine = ++generation.current;
    inFlight.current = true;
    setState({ rows: [], nextUrl: null, loading: true, error: null, done: false });
    api.firstPage(table, { filter, sort }, PAGE_SIZE).then(
      (page) => {
        if (mine !== generation.current) return;
        inFlight.current = false;
        setState({ rows: page.data, nextUrl: page.nextUrl, loading: false, error: null, done: page.nextUrl === null });
      },
      (err: Error) => {
        if (mine !== generation.current) return;
        inFlight.current = false;
        setState({ rows: [], nextUrl: null, loading: false, error: err, done: true });
      },
    );
  }, [api, table, filter, sort]);

  useEffect(reload, [reload]);

  const current = useRef(state);
  current.current = state;
  const loadMore = useCallback(() => {
    const s = current.current;
    if (inFlight.current || s.nextUrl === null || s.error) return;
    const mine = generation.current;
    inFlight.current = true;
    setState((t) => ({ ...t, loading: true }));
    api.nextPage(s.nextUrl).then(
      (page) => {
        if (mine !== generation.current) return;
        inFlight.current = false;
        setState((t) => ({ ...t, rows: [...t.rows, ...page.data], nextUrl: page.nextUrl, loading: false, done: page.nextUrl === null }));
      },
      (err: Error) => {
        if (mine !== generation.current) return;
        inFlight.current = false;
        setState((t) => ({ ...t, loading: false, error: err }));
      },
    );
  }, [api]);

  /** Rows changed here (edited, created) put in place; deleted ones taken out. */
  const replace = useCallback((changed: Row[], appended: Row[] = [], deleted: string[] = []) => {
    const byId = new Map(changed.map((r) => [r.id, r]));
    const gone = new Set(deleted);
    setState((s) => ({ ...s, rows: [...s.rows.filter((r) => !gone.has(r.id)).map((r) => byId.get(r.id) ?? r), ...appended] }));
  }, []);

  /**
   * Another client's write, from the change stream: a changed row put in place (unless the grid
   * already holds a newer one), a deleted one taken out, a created one added at the end once the
   * last page is loaded (before that, paging reaches it where the view's order puts it). The stream
   * follows the view's own filter, links included (CONTRACT §14).
   */
  const applyChange = useCallback((change: Change) => {
    setState((s) => {
      const at = s.rows.findIndex((r) => r.id === change.rowId);
      if (change.type === 'delete' || change.row === null) return at < 0 ? s : { ...s, rows: s.rows.filter((r) => r.id !== change.rowId) };
      const row = change.row;
      if (at >= 0) {
        if (s.rows[at].updatedAt >= row.updatedAt) return s; // held already (a write of this console, whose answer has download URLs the change lacks)
        const rows = s.rows.slice();
        rows[at] = row;
        return { ...s, rows };
      }
      return s.done && !s.loading ? { ...s, rows: [...s.rows, row] } : s;
    });
  }, []);

  return { ...state, loadMore, reload, replace, applyChange };
}
