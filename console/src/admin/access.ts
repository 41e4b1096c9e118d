import { useEffect, useRef, useState } from 'react';
import { type Api, ApiError } from '../api.ts';

/**
 * The signed-in key (`GET /api/api-keys/me`, CONTRACT §12) and what it may do: the administration
 * turns off, with the reason, what the key would be refused. The service still decides: a 403 is
 * shown as it answers it.
 */

/** What every generic resource item has (docs/api.md, Generic resources). */
export interface Item {
  id: string;
  createdAt: string;
  updatedAt: string;
  createdBy: string;
  updatedBy: string;
}

export interface RateLimit {
  requests: number;
  perSeconds: number;
}

export interface ApiKey extends Item {
  name: string;
  memberId: string;
  prefix: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  revokedAt: string | null;
  scopes: string[];
  tables: string[];
  rateLimit: RateLimit | null;
  /** The key itself: in the create answer only. */
  key?: string;
}

export const can = (me: ApiKey | null, scope: string): boolean => me !== null && (me.scopes.includes('*') || me.scopes.includes(scope));

export const lacks = (scope: string) => `Your key lacks ${scope}.`;

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
