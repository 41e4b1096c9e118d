import http from 'node:http';

/**
 * A Server-Sent Events client over node:http, for the change stream tests: it parses the stream as
 * the EventSource specification does (fields `id`, `event`, `data`, `retry`; lines starting with
 * `:` are comments), and keeps every event and comment it got, so tests can wait for them and
 * look at them, or stop reading (pause) and cut the connection (close) at will.
 */

export interface SseEvent {
  id: string | undefined;
  event: string;
  data: string;
}

export class SseConnection {
  readonly events: SseEvent[] = [];
  readonly comments: string[] = [];
  /** The last id seen, as an EventSource keeps it for its reconnect. */
  lastEventId: string | undefined;
  /** Resolves when the server ends the stream or the connection goes. */
  readonly ended: Promise<void>;
  endedAt: number | undefined;
  private buffer = '';
  private waiters: (() => void)[] = [];

  constructor(
    readonly status: number,
    readonly headers: http.IncomingHttpHeaders,
    private readonly request: http.ClientRequest,
    readonly response: http.IncomingMessage,
    /** The body, when the status is not 200. */
    readonly text: Promise<string>,
  ) {
    this.ended = new Promise((resolve) => {
      const done = () => {
        this.endedAt ??= Date.now();
        this.notify();
        resolve();
      };
      response.once('end', done);
      response.once('close', done);
      response.once('error', done);
    });
    if (status === 200) {
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => this.take(chunk));
    }
  }

  private take(chunk: string): void {
    this.buffer += chunk;
    let at: number;
    while ((at = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, at);
      this.buffer = this.buffer.slice(at + 2);
      let id: string | undefined;
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) {
          this.comments.push(line.slice(1).trim());
          continue;
        }
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') id = value;
        else if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
      }
      if (id !== undefined) this.lastEventId = id;
      if (data.length > 0) this.events.push({ id, event, data: data.join('\n') });
    }
    this.notify();
  }

  private notify(): void {
    const waiting = this.waiters;
    this.waiters = [];
    for (const w of waiting) w();
  }

  /** The changes received (each event's data, parsed). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  changes(): any[] {
    return this.events.filter((e) => e.event === 'change').map((e) => JSON.parse(e.data));
  }

  /** Waits until `done()` holds (checked as data arrives), failing after `ms`. */
  async until(done: () => boolean, ms: number, what: string): Promise<void> {
    const deadline = Date.now() + ms;
    while (!done()) {
      if (this.endedAt !== undefined) throw new Error(`${what}: the stream ended first (${this.events.length} events)`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${what}: not within ${ms} ms (${this.events.length} events)`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Stops reading: the client's socket buffers fill, then the server's. */
  pause(): void {
    this.response.pause();
    this.response.socket?.pause();
  }

  /** Reads again. */
  resume(): void {
    this.response.socket?.resume();
    this.response.resume();
  }

  /** Cuts the connection. */
  close(): void {
    this.request.destroy();
  }
}

/** Opens `url` (absolute) as an event stream with the given headers; resolves once the status and headers came. */
export function openSse(url: string, headers: Record<string, string> = {}): Promise<SseConnection> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers: { accept: 'text/event-stream', ...headers }, agent: false }, (response) => {
      let text = Promise.resolve('');
      if (response.statusCode !== 200) {
        text = new Promise((done) => {
          let body = '';
          response.setEncoding('utf8');
          response.on('data', (d: string) => (body += d));
          response.on('end', () => done(body));
        });
      }
      resolve(new SseConnection(response.statusCode ?? 0, response.headers, request, response, text));
    });
    request.on('error', reject);
  });
}
