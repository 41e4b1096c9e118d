import net from 'node:net';
import { type Getter, TEST_KEY } from './harness.ts';

/** Helpers for tests that talk to a listening server with a real HTTP client. */

/** A port nothing listens on right now. */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, host, () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** `p`, or a failure naming `what` when it has not settled within `ms` (instead of a test that hangs). */
export async function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** An answer: its status, its body as JSON (undefined when empty or not JSON) and as text. */
export interface Answer {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  text: string;
}

/** A request with the test key (or `key`) and a JSON body, by fetch; throws when no whole answer came (a connection reset). */
export async function callJson(base: string, method: string, path: string, body?: unknown, key = TEST_KEY): Promise<Answer> {
  const res = await fetch(base + path, {
    method,
    headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed, text };
}

/** GETs over HTTP from a listening server at `base`, for helpers that take a Getter (harness.ts allRows). */
export function overHttp(base: string): Getter {
  return { get: (path) => callJson(base, 'GET', path) };
}

/**
 * Polls `probe` (every 20 ms) until it answers something other than undefined or false, and answers
 * that; fails naming `what` (and `detail()`, for the diagnosis) when `ms` pass first.
 */
export async function until<T>(what: string, probe: () => Promise<T | undefined | false> | T | undefined | false, ms = 10_000, detail: () => string = () => ''): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${detail() ? `\n${detail()}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
