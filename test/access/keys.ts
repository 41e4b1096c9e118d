import assert from 'node:assert/strict';
import type { TestApp } from '../support/harness.ts';

/** A key made through the API by the test's full key, with these scopes and tables (and rate limit): its secret. */
export async function makeKey(t: TestApp, scopes: readonly string[], tables: readonly string[] = ['*'], extra: Record<string, unknown> = {}): Promise<string> {
  const made = await t.post('/api/api-keys', { name: `${scopes.join('+')} on ${tables.join('+')}`, scopes, tables, ...extra });
  assert.equal(made.status, 201, made.text);
  return made.body.key as string;
}
