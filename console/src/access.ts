import { useEffect, useRef, useState } from 'react';
import { type Api, ApiError } from './api.ts';
import type { ApiKey } from './scopes.ts';

/**
 * The signed-in key (`GET /api/api-keys/me`, CONTRACT §12), read once for every screen that turns
 * off what the key would be refused (scopes.ts says what it may do, rights.tsx turns it off).
 */

// One /me request for the nav and the screen; asked again after a change to the keys.
const cache = new WeakMap<Api, Promise<ApiKey>>();
const changed = new EventTarget();

function fetchMe(api: Api): Promise<ApiKey> {
  let p = cache.get(api);
  if (!p) {
    p = api.request<ApiKey>('GET', '/api/api-keys/me');
    cache.set(api, p);
    p.catch(() => cache.delete(api));
  }
  return p;
}

/** After a key was created, changed or revoked: /me again, for every screen that shows it. */
export function refreshMe(api: Api): void {
  cache.delete(api);
  changed.dispatchEvent(new Event('change'));
}

/** The signed-in key's record; null while it loads. A 401 (revoked, expired) signs out. */
export function useMe(api: Api, onSignedOut: () => void): { me: ApiKey | null; error: unknown } {
  const [state, setState] = useState<{ me: ApiKey | null; error: unknown }>({ me: null, error: null });
  const signOut = useRef(onSignedOut);
  signOut.current = onSignedOut;
  useEffect(() => {
    let live = true;
    const load = () =>
      fetchMe(api).then(
        (me) => live && setState({ me, error: null }),
        (error) => {
          if (!live) return;
          if (error instanceof ApiError && error.status === 401) signOut.current();
          else setState({ me: null, error });
        },
      );
    void load();
    const again = () => void load();
    changed.addEventListener('change', again);
    return () => {
      live = false;
      changed.removeEventListener('change', again);
    };
  }, [api]);
  return state;
}
