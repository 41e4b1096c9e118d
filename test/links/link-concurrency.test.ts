import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { type TestApp, eachDatabase, startApp } from '../support/harness.ts';
import { shop, snapshot, valuesById } from './support.ts';

/**
 * Links stay whole under concurrent writers: orders linking customers while those customers are
 * deleted (onDelete unlink) and orders move between customers. However the requests interleave,
 * no order is left linking a row that is gone, and each customer's `orders` is exactly the orders
 * whose `customer` names it (on PostgreSQL the writers really overlap).
 */

eachDatabase('links: concurrent writers', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(kind);
  });
  after(() => t.close());

  it('leaves no dangling link and both sides in step', async () => {
    const s = await shop(t);
    const customers = Array.from({ length: 20 }, (_, i) => ({ id: `c${i}`, values: {} }));
    assert.equal((await t.post(`/api/tables/${s.customers}/rows-bulk`, { data: customers })).status, 201);
    const work: Promise<unknown>[] = [];
    for (let i = 0; i < 60; i++) {
      const c = `c${i % 20}`;
      work.push(t.post(`/api/tables/${s.orders}/rows`, { id: `o${i}`, values: { customer: c } }));
      if (i % 3 === 0) work.push(t.delete(`/api/tables/${s.customers}/rows/c${(i + 7) % 20}`));
      if (i % 4 === 0) work.push(t.patch(`/api/tables/${s.orders}/rows/o${Math.max(0, i - 2)}`, { values: { customer: `c${(i + 1) % 20}` } }));
    }
    const replies = (await Promise.all(work)) as { status: number; text: string }[];
    for (const r of replies) assert.ok([200, 201, 204, 400, 404].includes(r.status), `${r.status} ${r.text}`);
    const now = await snapshot(t, s.customers, s.orders);
    const alive = valuesById(now[s.customers]);
    const orders = valuesById(now[s.orders]);
    for (const [id, values] of Object.entries(orders)) {
      if (values.customer !== null) assert.ok(alive[values.customer], `order ${id} links ${values.customer}, which is gone`);
    }
    for (const [id, values] of Object.entries(alive)) {
      const linking = Object.keys(orders).filter((o) => orders[o].customer === id).sort();
      assert.deepEqual([...values.orders].sort(), linking, `customer ${id}`);
    }
  });
});
