// Helpers shared by the generic resource tests (resources*.test.ts). Not a test file itself.
import assert from 'node:assert/strict';
import type { Reply, TestApp } from '../support/harness.ts';

export type Item = Record<string, unknown> & { id: string };

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const GENERATED_KEY = /^rh_[0-9A-Za-z]{40}$/;

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Asserts the status (showing the body when it differs) and returns the body. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function expectStatus(reply: Reply, status: number): any {
  assert.equal(reply.status, status, `expected ${status}, got ${reply.status}: ${reply.text.slice(0, 500)}`);
  return reply.body;
}

/** Every item of a resource matching the query, read by walking the pages (limit 1000). */
export async function listAll(t: TestApp, resource: string, query: Record<string, unknown> = {}): Promise<Item[]> {
  const items: Item[] = [];
  let offset: number | null = 0;
  while (offset !== null) {
    const body = expectStatus(await t.get(`/api/${resource}`, { query: { ...query, paging: { limit: 1000, offset } } }), 200);
    items.push(...body.data);
    offset = body.pagination.nextOffset;
  }
  return items;
}

/** The sorted names of the items a list request answers. */
export function namesOf(reply: Reply): string[] {
  const body = expectStatus(reply, 200);
  return (body.data as Item[]).map((i) => i.name as string).sort();
}

/** A name no other test uses: tests of one database share the app and its data. */
let counter = 0;
export function unique(prefix: string): string {
  counter += 1;
  return `${prefix}_${counter}_${Math.random().toString(36).slice(2, 8)}`;
}

/** A complete flow definition, on a new table, that an enabled flow needs (CONTRACT §9, flows); nothing is ever sent to it here. */
export async function hook(t: TestApp): Promise<Record<string, unknown>> {
  const table = expectStatus(await t.post('/api/tables', { name: 'hooked', fields: [] }), 201);
  return { trigger: { table: table.id, events: ['create'] }, webhook: { url: 'https://example.com/hook' } };
}

/** A flow as get and list answer it: its create answer without the secret, which is answered once. */
export function withoutSecret(item: Item): Item {
  const { secret: _secret, ...rest } = item;
  return rest as Item;
}
