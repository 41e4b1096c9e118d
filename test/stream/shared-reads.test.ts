import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { TEST_KEY, eachDatabase } from '../support/harness.ts';
import { type ListeningApp, startListening } from '../support/listening.ts';
import { type SseConnection, openSse } from './sse.ts';

/**
 * Issue 31: the streams of a table at one position share one read of the change log. Fifty streams
 * woken by a commit read the log with the statements of one read (PostgreSQL, where the app's
 * statements can be counted), not fifty times as many, and every one of them gets the change.
 */
eachDatabase('change streams share their reads', (kind) => {
  let t: ListeningApp;
  let statements: string[] | null = null;
  const streams: SseConnection[] = [];

  before(async () => {
    t = await startListening(kind, {}, { onQuery: (sql) => statements?.push(sql) });
  });
  after(() => t.close());

  it('fifty streams woken by one commit: one read of the log, the change to each', { skip: kind !== 'postgres' && 'PostgreSQL only (its statements are counted)' }, async () => {
    assert.equal((await t.post('/api/tables', { code: 'shared', name: 'shared', fields: [{ code: 'n', type: 'number' }] })).status, 201);
    for (let i = 0; i < 50; i++) streams.push(t.track(await openSse(`${t.base}/api/tables/shared/changes/stream`, { 'x-api-key': TEST_KEY })));
    for (const c of streams) await c.until(() => c.comments.includes('open'), 5000, 'open');
    // Let the streams' first looks settle.
    await new Promise((resolve) => setTimeout(resolve, 300));
    statements = [];
    assert.equal((await t.post('/api/tables/shared/rows', { values: { n: 1 } })).status, 201);
    for (const c of streams) await c.until(() => c.events.length === 1, 3000, 'the change');
    const reads = statements.filter((s) => /from "rh_changes"/.test(s) && /"sequence" >/.test(s));
    statements = null;
    // One read of the change, one that finds nothing after it, perhaps the look every second: not fifty of each.
    assert.ok(reads.length <= 3, `${reads.length} reads of the log:\n${reads.join('\n')}`);
  });
});
