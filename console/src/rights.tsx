import { type ReactNode, useId } from 'react';
import type { Api, Table } from './api.ts';
import { useMe } from './access.ts';
import { type ApiKey, refusal } from './scopes.ts';
import { ErrorBox } from './ErrorBox.tsx';

/**
 * What a screen's controls need, and what of it the signed-in key lacks (GET /api/api-keys/me,
 * CONTRACT §12). A control the key would be refused is turned off before it is tried: disabled,
 * described (aria-describedby) by a note on the screen that names the scope it lacks and what it
 * turns off, with the same words as its tooltip. The service still decides: a 403 it answers anyway
 * (a key changed since it was read) is shown as it says it (ErrorBox).
 */

/** One need: the scope, and what the screen cannot do without it ("rows cannot be added here"). */
export interface Need {
  scope: string;
  without: string;
}

export interface Rights<K extends string> {
  /** Why the key may not use what `need` names, or null when it may. */
  refused: (need: K) => string | null;
  /** A control's props: turned off, with its reasons, when the key lacks any of `needs`; nothing when it has them. */
  off: (...needs: K[]) => { disabled?: true; title?: string; 'aria-describedby'?: string };
  /** The id of the note's line for `need` (to describe a control turned off some other way). */
  reasonId: (need: K) => string;
  /** The note naming each need the key lacks; null when it lacks none. */
  note: ReactNode;
}

/** The rights of the key `me` over a screen's needs (on `table`'s rows, for rows scopes). */
export function useRights<K extends string>(me: ApiKey, table: Table | null, needs: Record<K, Need>): Rights<K> {
  const base = useId();
  const keys = Object.keys(needs) as K[];
  const why = new Map<K, string>();
  for (const k of keys) {
    const r = refusal(me, needs[k].scope, table ?? undefined);
    if (r !== null) why.set(k, `${r}: ${needs[k].without}.`);
  }
  const reasonId = (k: K) => `${base}-${k}`;
  return {
    refused: (k) => why.get(k) ?? null,
    off: (...ks) => {
      const lacking = ks.filter((k) => why.has(k));
      return lacking.length === 0 ? {} : { disabled: true, title: lacking.map((k) => why.get(k)).join(' '), 'aria-describedby': lacking.map(reasonId).join(' ') };
    },
    reasonId,
    note:
      why.size === 0 ? null : (
        <ul className="note refused-note" aria-label="Turned off for your key">
          {[...why].map(([k, text]) => (
            <li key={k} id={reasonId(k)}>{text}</li>
          ))}
        </ul>
      ),
  };
}

/** A screen that needs the signed-in key's record: drawn once it is read (its error shown; a 401 signs out). */
export function WithMe({ api, onSignedOut, children }: { api: Api; onSignedOut: () => void; children: (me: ApiKey) => ReactNode }) {
  const { me, error } = useMe(api, onSignedOut);
  if (me) return <>{children(me)}</>;
  return error ? <ErrorBox error={error} /> : <p role="status">Loading your key…</p>;
}
