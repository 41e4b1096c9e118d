import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type TestApp, eachDatabase, expectError, startApp } from '../support/harness.ts';
import { snapshot } from './support.ts';

/**
 * What a bulk create with a link sends to the database (store/links/link-writes.ts; decisions.md,
 * "Bulk writes with links, again"): besides the rows and their entries, the ids checked (the
 * statement answering how many it found; which are missing only when some are) and the edges inserted; the target table's
 * definition comes from the memo once a write has committed, not read again in each transaction.
 * On PostgreSQL the statements are seen as sent (onQuery); on both, the check still refuses an
 * unknown id, naming it, with nothing written.
 */

eachDatabase('links: the statements of a bulk create', (kind) => {
  let t: TestApp;
  let statements: string[] | undefined;
  before(async () => {
    t = await startApp(kind, {}, { onQuery: (sql) => statements?.push(sql) });
  });
  after(() => t.close());

  const bulk = async (table: string, data: unknown[]) => {
    statements = [];
    const r = await t.post(`/api/tables/${table}/rows-bulk`, { data });
    const sent = statements;
    statements = undefined;
    return { r, sent };
  };
  const orders = (from: number, linked: boolean) =>
    Array.from({ length: 20 }, (_, i) => ({ id: `o${from + i}`, values: { no: from + i, ...(linked ? { customer: `c${(from + i) % 7}` } : {}) } }));
  // The background load that fills the memo after a commit: given time to finish.
  const settle = () => new Promise((resolve) => setTimeout(resolve, 200));

  it('adds the check and the edges to the bulk, and no read of the target table once it is memoised', async () => {
    assert.equal((await t.post('/api/tables', { code: 'clients', name: 'Clients', fields: [{ code: 'name', type: 'text' }] })).status, 201);
    const made = await t.post('/api/tables', {
      code: 'buys',
      name: 'Buys',
      fields: [{ code: 'no', type: 'number' }, { code: 'customer', type: 'link', options: { table: 'clients' } }],
    });
    assert.equal(made.status, 201, made.text);
    assert.equal((await t.post('/api/tables/clients/rows-bulk', { data: Array.from({ length: 7 }, (_, i) => ({ id: `c${i}`, values: { name: `n${i}` } })) })).status, 201);
    assert.equal((await bulk('buys', orders(0, true))).r.status, 201);
    await settle();
    const linked = await bulk('buys', orders(100, true));
    assert.equal(linked.r.status, 201, linked.r.text);
    const plain = await bulk('buys', orders(200, false));
    assert.equal(plain.r.status, 201, plain.r.text);
    // Every row links as written, and the other direction finds them (the edges).
    const page = await t.get('/api/tables/buys/rows', { query: { filter: { values: { customer: { _eq: 'c3' } } }, pageSize: '200' } });
    assert.equal(page.status, 200, page.text);
    const expected = [...orders(0, true), ...orders(100, true)].filter((o) => o.values.customer === 'c3').map((o) => o.id).sort();
    assert.deepEqual(page.body.data.map((r: { id: string }) => r.id).sort(), expected);
    if (kind !== 'postgres') return;
    assert.ok(!linked.sent.some((s) => /from "rh_tables"/.test(s)), `the target table was read again:\n${linked.sent.join('\n')}`);
    const extra = linked.sent.filter((s) => !plain.sent.includes(s));
    assert.equal(extra.length, 2, `expected the check and the edges only:\n${extra.join('\n')}`);
    // The check answers how many ids it found (one row), not the rows it found.
    assert.match(extra[0], /^select count\(\*\)/);
    assert.match(extra[0], /for key share/);
    assert.match(extra[1], /^insert into "links_/);
  });

  it('still refuses an unknown id, naming it, with nothing written', async () => {
    const before = await snapshot(t, 'buys');
    const data = orders(300, true);
    data[5] = { id: 'o305', values: { no: 305, customer: 'c-missing' } };
    const r = await t.post('/api/tables/buys/rows-bulk', { data });
    const body = expectError(r, 400);
    assert.match(JSON.stringify(body), /c-missing/);
    assert.match(JSON.stringify(body), /data\[5\]/);
    assert.deepEqual(await snapshot(t, 'buys'), before);
  });
});
