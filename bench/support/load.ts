import autocannon from 'autocannon';

export interface Load {
  rps: number;
  mean: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

export interface LoadRequest {
  method?: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** A fixed path, or one made for each request. */
  path: string | (() => string);
  body?: () => string;
  headers?: Record<string, string>;
  /** Headers made for each request, besides `headers` (a fresh Idempotency-Key). */
  moreHeaders?: () => Record<string, string>;
}

/**
 * Sends requests from `connections` connections (10 unless given) for `seconds` and reports
 * throughput and latency (ms). A request unanswered after `timeout` seconds (10 unless given) counts
 * as an error: slow queries (aggregates over millions of rows) need more.
 */
export async function load(base: string, req: LoadRequest, seconds: number, connections = 10, timeout = 10): Promise<Load> {
  const headers = { 'content-type': 'application/json', ...req.headers };
  const result = await autocannon({
    url: base,
    connections,
    duration: seconds,
    timeout,
    requests: [
      {
        method: req.method ?? 'GET',
        headers,
        setupRequest: (r: autocannon.Request) => ({
          ...r,
          path: typeof req.path === 'function' ? req.path() : req.path,
          ...(req.body ? { body: req.body() } : {}),
          ...(req.moreHeaders ? { headers: { ...headers, ...req.moreHeaders() } } : {}),
        }),
      },
    ],
  });
  return { rps: result.requests.average, mean: result.latency.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.errors, non2xx: result.non2xx };
}
