import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request the receiver got: its path, headers and body (as text and parsed). */
export interface Arrival {
  path: string;
  headers: http.IncomingHttpHeaders;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/** How the receiver answers a request: a status (at once, or after delayMs), or 'hang' (never, holding it open). */
export type ReceiverAnswer = number | { status: number; delayMs?: number } | 'hang';

/** A webhook receiver on 127.0.0.1: records every request in arrival order, and answers as `answer` says. */
export class WebhookReceiver {
  readonly received: Arrival[] = [];
  /** `n`: the request's number, from 1. */
  answer: (arrival: Arrival, n: number) => ReceiverAnswer = () => 200;
  /** The requests answered 'hang' whose connection is still open. */
  readonly hanging = new Set<Arrival>();
  private server: http.Server | null = null;
  port = 0;

  /** Listens (on `port`, by default a free one). */
  async start(port = 0): Promise<this> {
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const arrival: Arrival = { path: req.url ?? '', headers: req.headers, text, body: JSON.parse(text) };
        this.received.push(arrival);
        const a = this.answer(arrival, this.received.length);
        if (a === 'hang') {
          this.hanging.add(arrival);
          res.on('close', () => this.hanging.delete(arrival));
          return;
        }
        const { status, delayMs } = typeof a === 'number' ? { status: a, delayMs: 0 } : a;
        const send = () => res.writeHead(status).end('ok');
        if (delayMs) setTimeout(send, delayMs);
        else send();
      });
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    return this;
  }

  /** Its URL with this path. */
  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Cuts every connection (hanging ones too) and stops listening. */
  async stop(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (!s) return;
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
}
