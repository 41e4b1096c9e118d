import { randomUUID } from 'node:crypto';
import type { ChangeSignals } from '../dialect.ts';
import type { MetadataListener } from './metadata-listener.ts';

/** The channel instances announce their change log commits on: `<instance>:<table id>`. */
const CHANNEL = 'rowhouse_changes';
/**
 * The shortest time between two announcements of one table by one instance. A burst of commits
 * (thousands a second) is one NOTIFY per table per 50 ms, not one per commit: each NOTIFY takes the
 * server's notification queue lock at its commit and wakes every listening instance.
 */
const MIN_GAP_MS = 50;

/**
 * PostgreSQL's word between instances about the change log (dialect.ts ChangeSignals): NOTIFY
 * after a commit, sent and heard on the metadata listener's LISTEN connection (off the pool: no
 * request waits for it or counts it among its statements). A listener
 * reads the log itself, so a lost announcement (a NOTIFY that failed, a listener reconnecting)
 * costs only time: the change streams also look on their own (stream/change-streams.ts).
 */
export class PostgresChangeSignals implements ChangeSignals {
  /** This instance, so that it does not hear its own announcements (it woke its streams already). */
  private readonly self = randomUUID();
  /** Tables being announced now, and whether another commit came meanwhile. */
  private readonly sending = new Map<string, { again: boolean }>();
  private readonly listeners = new Set<(tableId: string | null) => void>();
  private listening = false;
  private closed = false;
  private readonly flights = new Set<Promise<void>>();

  constructor(private readonly listener: MetadataListener) {}

  announce(tableId: string): void {
    if (this.closed) return;
    const busy = this.sending.get(tableId);
    if (busy) {
      busy.again = true;
      return;
    }
    const state = { again: false };
    this.sending.set(tableId, state);
    const flight = this.send(tableId, state).finally(() => {
      this.sending.delete(tableId);
      this.flights.delete(flight);
    });
    this.flights.add(flight);
  }

  private async send(tableId: string, state: { again: boolean }): Promise<void> {
    do {
      state.again = false;
      try {
        await this.listener.notify(CHANNEL, `${this.self}:${tableId}`);
      } catch {
        // The listeners look on their own as well; a database that is going away ends the loop.
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, MIN_GAP_MS));
    } while (state.again && !this.closed);
  }

  listen(heard: (tableId: string | null) => void): () => void {
    this.listeners.add(heard);
    if (!this.listening) {
      this.listening = true;
      this.listener.listen(CHANNEL, (payload) => {
        if (payload === null) {
          for (const l of this.listeners) l(null);
          return;
        }
        const at = payload.indexOf(':');
        if (at < 0 || payload.slice(0, at) === this.self) return;
        const tableId = payload.slice(at + 1);
        for (const l of this.listeners) l(tableId);
      });
    }
    return () => this.listeners.delete(heard);
  }

  live(): boolean {
    return this.listener.current() !== undefined;
  }

  /** Lets announcements under way finish (before the pool closes). */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.flights);
  }
}
