import assert from 'node:assert/strict';
import { type TestApp, allRows } from '../support/harness.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Row = Record<string, any>;

let seq = 0;

/** A fresh customers / orders / lines trio: orders.customer (single) paired with customers.orders; lines.order (single, cascade) paired with orders.lines. */
export async function shop(t: TestApp, options: { customerOnDelete?: string; lineOnDelete?: string } = {}): Promise<{ customers: string; orders: string; lines: string; ids: Record<string, string> }> {
  const n = ++seq;
  const customers = `customers_${n}`;
  const orders = `orders_${n}`;
  const lines = `lines_${n}`;
  const c = await t.post('/api/tables', { code: customers, name: 'Customers', fields: [{ code: 'name', type: 'text' }, { code: 'country', type: 'text' }] });
  assert.equal(c.status, 201, c.text);
  const o = await t.post('/api/tables', {
    code: orders,
    name: 'Orders',
    fields: [
      { code: 'no', type: 'number', options: { indexed: true } },
      { code: 'customer', type: 'link', options: { table: customers, onDelete: options.customerOnDelete ?? 'unlink', inverse: { code: 'orders' } } },
    ],
  });
  assert.equal(o.status, 201, o.text);
  const l = await t.post('/api/tables', {
    code: lines,
    name: 'Lines',
    fields: [
      { code: 'sku', type: 'text' },
      { code: 'order', type: 'link', options: { table: orders, onDelete: options.lineOnDelete ?? 'cascade', inverse: { code: 'lines', name: 'Lines' } } },
    ],
  });
  assert.equal(l.status, 201, l.text);
  return { customers, orders, lines, ids: { customers: c.body.id, orders: o.body.id, lines: l.body.id } };
}

/** Every row of each table, by id: to show that a refused request changed nothing. */
export async function snapshot(t: TestApp, ...tables: string[]): Promise<Record<string, Row[]>> {
  const out: Record<string, Row[]> = {};
  for (const table of tables) out[table] = await allRows(t, table);
  return out;
}

export function valuesById(rows: Row[]): Record<string, Row> {
  return Object.fromEntries(rows.map((r) => [r.id, r.values]));
}
