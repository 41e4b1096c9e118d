/**
 * The console's one way to the service: the public /api with the signed-in key in X-API-Key, like
 * any client, so the key's scopes apply. Same origin only (the page's CSP allows no other): a
 * `nextUrl` names the service's public URL, and only its path and query are fetched here.
 */
import type { Change, ErrorDetail, Page, Row, Table } from './types.ts';

export type { Change, ErrorDetail, Field, FieldType, Page, Row, Table } from './types.ts';

/** An answer in the service's one error format (CONTRACT §3). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly details: ErrorDetail[] = [],
    readonly index?: number,
  ) {
    super(message);
  }
}

/** The path and query of a URL the service handed out, to be fetched from this page's origin. */
export function sameOrigin(url: string): string {
  const u = new URL(url, location.href);
  return u.pathname + u.search;
}

export class Api {
  /** The service's clock less this browser's, from the last answer's Date header (whole seconds). */
  private skewMs = 0;

  constructor(private readonly key: string) {}

  /**
   * Now, as a time the service takes for "now": a browser whose clock runs ahead would otherwise
   * schedule a revocation for later. The Date header counts whole seconds, so a browser in step
   * gives a time up to a second early, never late.
   */
  serverNow(): Date {
    return new Date(Date.now() + Math.min(0, this.skewMs));
  }

  /** The key's header, for the requests made without this class (uploads with progress, downloads). */
  get headers(): Record<string, string> {
    return { 'x-api-key': this.key };
  }

  /** A download of an answer that needs the key (an export): fetched, then saved from a blob: URL. */
  async download(path: string, fallbackName: string): Promise<void> {
    const res = await fetch(path, { headers: this.headers, credentials: 'omit', cache: 'no-store' });
    if (!res.ok) {
      const e = (await res.json().catch(() => ({}))) as { message?: string; details?: ErrorDetail[] };
      throw new ApiError(res.status, e.message ?? `${res.status} ${res.statusText}`, e.details ?? []);
    }
    const name = /filename\*=UTF-8''([^;]+)/.exec(res.headers.get('content-disposition') ?? '')?.[1];
    const url = URL.createObjectURL(await res.blob());
    const a = document.createElement('a');
    a.href = url;
    a.download = name ? decodeURIComponent(name) : fallbackName;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  }

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { 'x-api-key': this.key, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit', cache: 'no-store' });
    } catch (err) {
      throw new ApiError(0, `The service cannot be reached: ${(err as Error).message}`);
    }
    const said = Date.parse(res.headers.get('date') ?? '');
    if (!Number.isNaN(said)) this.skewMs = said - Date.now();
    const text = await res.text();
    let parsed: unknown = undefined;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (!res.ok) {
      const e = (parsed ?? {}) as { message?: unknown; details?: unknown; index?: unknown };
      throw new ApiError(
        res.status,
        typeof e.message === 'string' ? e.message : `${res.status} ${res.statusText}`,
        Array.isArray(e.details) ? (e.details as ErrorDetail[]) : [],
        typeof e.index === 'number' ? e.index : undefined,
      );
    }
    return parsed as T;
  }

  /** Whether the key is accepted: its own record, which any valid key may read (CONTRACT §12), whatever its scopes. */
  async check(): Promise<void> {
    await this.request('GET', '/api/api-keys/me');
  }

  async tables(): Promise<Table[]> {
    const all: Table[] = [];
    for (let offset = 0; ; ) {
      const paging = encodeURIComponent(JSON.stringify({ limit: 1000, offset }));
      const sorting = encodeURIComponent(JSON.stringify({ name: 'asc' }));
      const page = await this.request<{ data: Table[]; pagination: { nextOffset: number | null } }>('GET', `/api/tables?paging=${paging}&sorting=${sorting}`);
      all.push(...page.data);
      if (page.pagination.nextOffset === null || page.pagination.nextOffset === undefined) return all;
      offset = page.pagination.nextOffset;
    }
  }

  table = (idOrCode: string) => this.request<Table>('GET', `/api/tables/${encodeURIComponent(idOrCode)}`);
  createTable = (body: Partial<Table>) => this.request<Table>('POST', '/api/tables', body);
  updateTable = (id: string, body: Partial<Table>) => this.request<Table>('PUT', `/api/tables/${encodeURIComponent(id)}`, body);
  deleteTable = (id: string) => this.request<Table>('DELETE', `/api/tables/${encodeURIComponent(id)}`);

  rowsPath(table: string): string {
    return `/api/tables/${encodeURIComponent(table)}/rows`;
  }

  /** The first page of a view (filter and sort as the API takes them, JSON text or null). */
  firstPage(table: string, view: { filter: string | null; sort: string | null }, pageSize: number): Promise<Page> {
    const q = new URLSearchParams({ pageSize: String(pageSize) });
    if (view.filter) q.set('filter', view.filter);
    if (view.sort) q.set('sort', view.sort);
    return this.request<Page>('GET', `${this.rowsPath(table)}?${q}`);
  }

  nextPage = (nextUrl: string) => this.request<Page>('GET', sameOrigin(nextUrl));
  createRow = (table: string, body: { id?: string; values: Record<string, unknown> }) => this.request<Row>('POST', this.rowsPath(table), body);
  updateRow = (table: string, id: string, values: Record<string, unknown>) =>
    this.request<Row>('PATCH', `${this.rowsPath(table)}/${encodeURIComponent(id)}`, { values });
  deleteRows = (table: string, ids: string[]) =>
    this.request<{ data: { id: string }[] }>('DELETE', `/api/tables/${encodeURIComponent(table)}/rows-bulk`, { ids });
  /** A signed URL of the table's change stream (CONTRACT §14): it names the key's id, never the key. */
  streamUrl = (table: string, filter: string | null) =>
    this.request<{ url: string; expiresAt: string }>('POST', `/api/tables/${encodeURIComponent(table)}/changes/stream-url`, filter ? { filter: JSON.parse(filter) } : {});
  /** A row's changes, newest first (CONTRACT §14). */
  history = (table: string, rowId: string) =>
    this.request<{ data: Change[]; nextUrl: string | null }>('GET', `${this.rowsPath(table)}/${encodeURIComponent(rowId)}/history?pageSize=50`);
  fileUploadUrl = (table: string, rowId: string) =>
    this.request<{ data: { id: string; url: string }[] }>('POST', `${this.rowsPath(table)}/${encodeURIComponent(rowId)}/file-upload-url`, { count: 1 });
  batch = (operations: BatchOperation[]) => this.request<{ data: { type: string; row: Row | null }[] }>('POST', '/api/rows-batch', { operations });
}

export type BatchOperation =
  | { type: 'create'; tableId: string; values: Record<string, unknown> }
  | { type: 'update'; tableId: string; id: string; values: Record<string, unknown> };
