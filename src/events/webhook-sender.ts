import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { isIpLiteral, isPrivateAddress } from '../domain/private-address.ts';

/**
 * One webhook POST (issue "Change events", items 3 and 5). Where the URL may lead is checked on
 * the address connected to: the socket's own DNS lookup is ours, and refuses a name that resolves
 * to a loopback, link-local, private or unique-local address (unless allowed), so no second lookup
 * can answer differently between the check and the connection. A literal address is checked as is
 * (the socket does no lookup for one). Redirects are not followed.
 */

export interface SendResult {
  /** The receiver's status; null when none came (refused, unreachable, timed out). */
  status: number | null;
  /** Why it did not succeed; null on a 2xx. Never holds the request's headers or secret. */
  error: string | null;
}

export interface SenderOptions {
  allowPrivate: boolean;
  timeoutMs: number;
}

const refusal = (host: string, address: string) =>
  `refused: ${host} is ${host === address ? '' : `resolved to ${address}, `}a loopback, link-local, private or unique-local address (ROWHOUSE_WEBHOOK_ALLOW_PRIVATE=true allows it)`;

class RefusedAddress extends Error {}

export class WebhookSender {
  private readonly agents: { http: http.Agent; https: https.Agent };
  private readonly lookup: LookupFunction;

  constructor(private readonly options: SenderOptions) {
    this.lookup = (hostname, opts, callback) => {
      dns.lookup(hostname, { ...opts, all: true }, (err, addresses) => {
        if (err) return callback(err, '', 0);
        const bad = options.allowPrivate ? undefined : addresses.find((a) => isPrivateAddress(a.address));
        if (bad) return callback(new RefusedAddress(refusal(hostname, bad.address)), '', 0);
        if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
        // The socket asks for every address when it races the families (autoSelectFamily), else for one.
        if ((opts as { all?: boolean }).all) (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, addresses);
        else callback(null, addresses[0].address, addresses[0].family);
      });
    };
    this.agents = { http: new http.Agent({ keepAlive: true, maxSockets: 16 }), https: new https.Agent({ keepAlive: true, maxSockets: 16 }) };
  }

  send(rawUrl: string, headers: Record<string, string>, body: string): Promise<SendResult> {
    let url: URL;
    try {
      url = new URL(rawUrl);
    } catch {
      return Promise.resolve({ status: null, error: 'the URL is not valid' });
    }
    if (!this.options.allowPrivate && isIpLiteral(url.hostname) && isPrivateAddress(url.hostname)) {
      return Promise.resolve({ status: null, error: refusal(url.hostname, url.hostname) });
    }
    const secure = url.protocol === 'https:';
    const payload = Buffer.from(body, 'utf8');
    return new Promise((resolve) => {
      let settled = false;
      const done = (result: SendResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(result);
      };
      const request = (secure ? https : http).request(url, {
        method: 'POST',
        agent: secure ? this.agents.https : this.agents.http,
        lookup: this.lookup,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(payload.length), 'user-agent': 'Rowhouse-Webhooks' },
      });
      const timer = setTimeout(() => {
        request.destroy();
        done({ status: null, error: `timed out after ${this.options.timeoutMs} ms` });
      }, this.options.timeoutMs);
      request.on('response', (response) => {
        const status = response.statusCode ?? 0;
        // The body is read (so the connection can be used again) and dropped.
        response.resume();
        response.on('end', () => done({ status, error: status >= 200 && status < 300 ? null : `the receiver answered ${status}` }));
        response.on('error', (err) => done({ status, error: `reading the answer: ${err.message}` }));
      });
      request.on('error', (err) => {
        if (err instanceof RefusedAddress) done({ status: null, error: err.message });
        else done({ status: null, error: `${(err as NodeJS.ErrnoException).code ?? 'error'}: ${err.message}` });
      });
      request.end(payload);
    });
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}
