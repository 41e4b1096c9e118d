import { useEffect, useRef, useState } from 'react';
import { type Api, ApiError, type Change, sameOrigin } from '../api.ts';

export type LiveState = 'connecting' | 'live' | 'reconnecting' | 'off';

/**
 * Follows a view's change stream (CONTRACT §14) so other clients' writes reach the grid without a
 * reload. The console asks for a signed stream URL with its key (POST …/changes/stream-url) and
 * opens that URL in an EventSource: the URL carries the key's id and a signature, never the key.
 * EventSource reconnects by itself with Last-Event-ID while the URL is valid; once it gives up (the
 * URL expired), a new URL is asked for and the stream resumes after the last change received.
 */
export function useLive(api: Api, table: string, filter: string | null, onChange: (c: Change, mayAdd: boolean) => void): LiveState {
  const [state, setState] = useState<LiveState>('connecting');
  const handler = useRef(onChange);
  handler.current = onChange;

  useEffect(() => {
    let source: EventSource | null = null;
    let stopped = false;
    let lastId: string | null = null;
    let retry: ReturnType<typeof setTimeout> | undefined;

    // A stream's filter cannot look through links (CONTRACT §14 takes _has and _isNull there): such a
    // view follows the whole table's stream, and its changes only update or remove rows it holds.
    const streamFilter = filter && !looksThroughLinks(JSON.parse(filter)) ? filter : null;
    const mayAdd = filter === streamFilter;

    async function open() {
      if (stopped) return;
      let url: string;
      try {
        url = sameOrigin((await api.streamUrl(table, streamFilter)).url);
      } catch (err) {
        // A key that may not read the stream (or a service without it): the grid works, just not live.
        if (err instanceof ApiError && err.status >= 400 && err.status < 500) return setState('off');
        setState('reconnecting');
        retry = setTimeout(() => void open(), 3000);
        return;
      }
      if (stopped) return;
      source = new EventSource(lastId === null ? url : `${url}&after=${encodeURIComponent(lastId)}`);
      source.onopen = () => setState('live');
      source.addEventListener('change', (e) => {
        const event = e as MessageEvent<string>;
        lastId = event.lastEventId;
        handler.current(JSON.parse(event.data) as Change, mayAdd);
      });
      source.onerror = () => {
        if (!source || source.readyState !== EventSource.CLOSED) return setState('reconnecting');
        source.close();
        setState('reconnecting');
        retry = setTimeout(() => void open(), 1000);
      };
    }
    void open();
    return () => {
      stopped = true;
      clearTimeout(retry);
      source?.close();
    };
  }, [api, table, filter]);

  return state;
}

/** Whether a filter holds a condition looking through a link (`_some`, `_none`, `_every`). */
function looksThroughLinks(filter: unknown): boolean {
  if (typeof filter !== 'object' || filter === null) return false;
  return Object.entries(filter).some(([k, v]) => k === '_some' || k === '_none' || k === '_every' || looksThroughLinks(v));
}
