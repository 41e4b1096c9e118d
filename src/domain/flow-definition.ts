import type { ErrorDetail } from './errors.ts';
import { isObject } from './json.ts';
import { isIpLiteral, isPrivateAddress } from './private-address.ts';

/**
 * A flow's `definition` (issue "Change events", item 3): which changes of which table it delivers,
 * and where. `{}` is a draft (allowed while the flow is disabled). The filter is checked against the
 * table's fields where the table is known (store/resources/flows.ts); here only the shape.
 */
export const CHANGE_TYPES = ['create', 'update', 'delete'] as const;
export type ChangeEvent = (typeof CHANGE_TYPES)[number];

export interface FlowDefinition {
  trigger: { table: string; events: ChangeEvent[]; filter?: Record<string, unknown> };
  webhook: { url: string; headers?: Record<string, string> };
}

const MAX_URL = 2048;
const MAX_HEADERS = 20;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
/** Headers the service sets itself, or that would break the request. */
const RESERVED_HEADERS = ['host', 'content-type', 'content-length', 'transfer-encoding', 'connection', 'user-agent', 'rowhouse-event-id', 'rowhouse-signature'];

export const isDraft = (definition: unknown): boolean => isObject(definition) && Object.keys(definition).length === 0;

function unknownKeys(value: Record<string, unknown>, allowed: string[], path: string, problems: ErrorDetail[]): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) problems.push({ path: `${path}.${key}`, message: `unknown key; use ${allowed.join(', ')}` });
  }
}

/** Problems of a webhook URL that need no DNS: scheme, form, and a literal address that is refused. */
export function urlProblems(raw: unknown, allowPrivate: boolean): string | null {
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > MAX_URL) return `must be an http:// or https:// URL of at most ${MAX_URL} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute http:// or https:// URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `must be an http:// or https:// URL, not ${url.protocol}`;
  if (!allowPrivate && isIpLiteral(url.hostname) && isPrivateAddress(url.hostname)) {
    return `${url.hostname} is a loopback, link-local, private or unique-local address: webhooks may not reach it (ROWHOUSE_WEBHOOK_ALLOW_PRIVATE=true allows it)`;
  }
  return null;
}

/**
 * Checks a definition's shape; answers it typed when it is complete and sound, null for a draft
 * (`{}`) or when there are problems (then added to `problems`, with paths under `definition`).
 */
export function parseFlowDefinition(value: unknown, allowPrivate: boolean, problems: ErrorDetail[]): FlowDefinition | null {
  const at = 'definition';
  if (!isObject(value) || isDraft(value)) return null;
  const before = problems.length;
  unknownKeys(value, ['trigger', 'webhook'], at, problems);
  const { trigger, webhook } = value;
  if (!isObject(trigger)) problems.push({ path: `${at}.trigger`, message: 'is required: an object {table, events, filter?}' });
  else {
    unknownKeys(trigger, ['table', 'events', 'filter'], `${at}.trigger`, problems);
    if (typeof trigger.table !== 'string' || trigger.table === '') problems.push({ path: `${at}.trigger.table`, message: 'is required: the id or code of a table' });
    const events = trigger.events;
    if (!Array.isArray(events) || events.length === 0 || events.some((e) => !(CHANGE_TYPES as readonly unknown[]).includes(e))) {
      problems.push({ path: `${at}.trigger.events`, message: `must be a non-empty array of ${CHANGE_TYPES.join(', ')}` });
    } else if (new Set(events).size !== events.length) {
      problems.push({ path: `${at}.trigger.events`, message: 'names an event twice' });
    }
    if (trigger.filter !== undefined && !isObject(trigger.filter)) problems.push({ path: `${at}.trigger.filter`, message: 'must be a row filter object' });
  }
  if (!isObject(webhook)) problems.push({ path: `${at}.webhook`, message: 'is required: an object {url, headers?}' });
  else {
    unknownKeys(webhook, ['url', 'headers'], `${at}.webhook`, problems);
    const bad = urlProblems(webhook.url, allowPrivate);
    if (bad) problems.push({ path: `${at}.webhook.url`, message: bad });
    const headers = webhook.headers;
    if (headers !== undefined) {
      if (!isObject(headers)) problems.push({ path: `${at}.webhook.headers`, message: 'must be an object of header name → text' });
      else {
        if (Object.keys(headers).length > MAX_HEADERS) problems.push({ path: `${at}.webhook.headers`, message: `at most ${MAX_HEADERS} headers` });
        for (const [name, v] of Object.entries(headers)) {
          const path = `${at}.webhook.headers.${name}`;
          if (!HEADER_NAME.test(name)) problems.push({ path, message: 'is not a valid header name' });
          else if (RESERVED_HEADERS.includes(name.toLowerCase())) problems.push({ path, message: 'is set by the service and cannot be given' });
          if (typeof v !== 'string' || v.length > 4096 || /[\r\n\0]/.test(v)) problems.push({ path, message: 'must be text of at most 4096 characters, without line breaks' });
        }
      }
    }
  }
  return problems.length > before ? null : (value as unknown as FlowDefinition);
}
