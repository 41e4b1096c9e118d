import { useEffect, useState } from 'react';

/**
 * The console's place is its URL's query (`/console?table=orders&filter=…&sort=…`), so a view can be
 * bookmarked and shared; it never holds the key.
 */
export interface Place {
  table: string | null;
  filter: string | null;
  sort: string | null;
}

export function readPlace(): Place {
  const q = new URLSearchParams(location.search);
  return { table: q.get('table'), filter: q.get('filter'), sort: q.get('sort') };
}

export function placeUrl(place: Place): string {
  const q = new URLSearchParams();
  if (place.table) q.set('table', place.table);
  if (place.table && place.filter) q.set('filter', place.filter);
  if (place.table && place.sort) q.set('sort', place.sort);
  const s = q.toString();
  return location.pathname + (s ? `?${s}` : '');
}

const listeners = new Set<() => void>();

export function go(place: Place): void {
  history.pushState(null, '', placeUrl(place));
  for (const l of listeners) l();
}

export function usePlace(): Place {
  const [place, setPlace] = useState(readPlace);
  useEffect(() => {
    const update = () => setPlace(readPlace());
    listeners.add(update);
    addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      removeEventListener('popstate', update);
    };
  }, []);
  return place;
}
