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
export function useLive(api: Api, table: string, filter: string | null, onChange: (c: Change) => void): LiveState {
  const [state, setState] = useState<LiveState>('connecting');
  const handler = useRef(onChange);
  handler.current = onChange;

  useEffect(() => {
    let source: EventSource | null = null;
    let stopped = false;
    let lastId: string | null = null;
    let retry: ReturnType<typeof setTimeout> | undefined;

    async function open() {
      if (stopped) return;
      let url: string;
      try {
        url = sameOrigin((await api.streamUrl(table, filter)).url);
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
        handler.current(JSON.parse(event.data) as Change);
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
