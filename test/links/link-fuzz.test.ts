import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import fc from 'fast-check';
import { type TestApp, eachDatabase, startApp } from '../support/harness.ts';
import { shop, snapshot } from './support.ts';

/**
 * Near-misses of every link input (CONTRACT §11) never break the service: link values in single,
 * bulk, batch and import writes, link filters (nested, under _not/_or) in lists, aggregates and
 * exports, `expand` everywhere it is taken, and link options in table changes. Each answers a 2xx
 * or a 4xx in the one error format, never a 5xx, and a refused write leaves every row as it was.
 */

const SEED = Number(process.env.ROWHOUSE_FC_SEED ?? 20_261_127);
const RUNS = Number(process.env.ROWHOUSE_FC_RUNS ?? 150);

const ids = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('c1', 'c2', 'o1', 'o2', 'l1') },
  { weight: 1, arbitrary: fc.constantFrom('c3', 'o3', 'self', '', ' c1', 'c1\u0000', 'x'.repeat(129), '__proto__', '"c1"', '[c1]', 'ö', '\ud800') },
);
const scalar = fc.oneof(ids, fc.constantFrom(null, true, 0, -1, 1.5, 1e308), fc.string({ maxLength: 3 }));
/** Values each link field takes (a number picks one), or a near-miss. */
const VALID_VALUES: Record<string, unknown[]> = { customer: ['c1', 'c2', null], orders: [['o1'], ['o2', 'o1'], []], lines: [['l1'], [], null], order: ['o1', 'o2', null] };
const valueOf = (field: string, v: unknown): unknown => (typeof v === 'number' && Number.isInteger(v) && v >= 1000 ? (VALID_VALUES[field] ?? [v])[v % 3] : v);
const idValue = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 1000, max: 1002 }) },
  { weight: 3, arbitrary: ids },
  { weight: 3, arbitrary: fc.array(ids, { maxLength: 4 }) },
  { weight: 1, arbitrary: scalar },
  { weight: 1, arbitrary: fc.array(scalar, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.record({ id: ids }) },
);
const linkCodes = ['customer', 'orders', 'lines', 'order'];
/** The link fields of each table of the shop, by its index: customers, orders, lines. */
const LINKS = [['orders'], ['customer', 'lines'], ['order']];
const codes = fc.constantFrom(...linkCodes, 'name', 'country', 'no', 'sku', 'nope', 'id', '');
/** A field of the table: mostly one of its link fields (by index), sometimes any code. */
const field = fc.oneof({ weight: 4, arbitrary: fc.nat(1) }, { weight: 1, arbitrary: codes });
const fieldOf = (table: number, f: number | string): string => (typeof f === 'number' ? LINKS[table][f % LINKS[table].length] : f);
const ops = fc.constantFrom('_eq', '_has', '_isNull', '_some', '_none', '_every', '_in', '_gt', '_contains', 'x');
const filter: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  f: fc.oneof(
    { depthSize: 'small', weight: 4, arbitrary: fc.record({ values: fc.dictionary(codes, tie('cond'), { maxKeys: 2 }) }) },
    { weight: 1, arbitrary: fc.record({ _or: fc.array(tie('f'), { maxLength: 2 }) }) },
    { weight: 1, arbitrary: fc.record({ _not: tie('f') }) },
    { weight: 1, arbitrary: scalar },
  ),
  cond: fc.oneof(
    { depthSize: 'small', weight: 3, arbitrary: fc.dictionary(ops, fc.oneof(ids, tie('f'), scalar, fc.constant({})), { maxKeys: 2 }) },
    { weight: 1, arbitrary: scalar },
  ),
})).f;
/** Filters each table takes, by its index, under _not and _or too. */
const VALID_FILTERS = [
  [{ values: { orders: { _every: { values: { no: { _gt: 0 } } } } } }, { values: { orders: { _some: { values: { lines: { _some: { values: { sku: { _eq: 'a' } } } } } } } } }, { _not: { values: { orders: { _has: 'o1' } } } }, { values: { orders: { _isNull: true } } }],
  [{ values: { customer: { _some: { values: { country: { _eq: 'JP' } } } } } }, { _or: [{ values: { customer: { _eq: 'c1' } } }, { values: { lines: { _none: { values: { sku: { _eq: 'a' } } } } } }] }, { values: { lines: { _every: { values: { order: { _has: 'o2' } } } } } }],
  [{ values: { order: { _has: 'o1' } } }, { values: { order: { _some: { values: { customer: { _some: { values: { orders: { _has: 'o2' } } } } } } } } }, { values: { order: { _isNull: false } } }],
];
const filterOf = (table: number, f: unknown): unknown => (typeof f === 'number' ? VALID_FILTERS[table][f % VALID_FILTERS[table].length] : f);
const someFilter = fc.oneof({ weight: 4, arbitrary: fc.nat(3) }, { weight: 1, arbitrary: filter });
const expandOf = (table: number, e: number | string | null): Record<string, string> => (e === null ? {} : { expand: typeof e === 'number' ? LINKS[table][e % LINKS[table].length] : e });
/** Mostly none; else mostly a link field of the table (by index), sometimes a near-miss. */
const expand = fc.option(
  fc.oneof(
    { weight: 4, arbitrary: fc.nat(1) },
    { weight: 1, arbitrary: fc.oneof(fc.array(codes, { maxLength: 3 }).map((a) => a.join(',')), fc.constantFrom(',', 'customer,', ' customer', 'customer,customer', Array.from({ length: 11 }, () => 'orders').join(','))) },
  ),
  { freq: 2 },
);

eachDatabase('links: near-misses never break the service', (kind) => {
  let t: TestApp;
  let s: Awaited<ReturnType<typeof shop>>;
  before(async () => {
    t = await startApp(kind);
    s = await shop(t, { customerOnDelete: 'restrict' });
    assert.equal((await t.post(`/api/tables/${s.customers}/rows-bulk`, { data: [{ id: 'c1', values: { name: 'A', country: 'JP' } }, { id: 'c2', values: { name: 'B' } }] })).status, 201);
    assert.equal((await t.post(`/api/tables/${s.orders}/rows-bulk`, { data: [{ id: 'o1', values: { no: 1, customer: 'c1' } }, { id: 'o2', values: { no: 2 } }] })).status, 201);
    assert.equal((await t.post(`/api/tables/${s.lines}/rows-bulk`, { data: [{ id: 'l1', values: { sku: 'a', order: 'o1' } }] })).status, 201);
  });
  after(() => t.close());

  it(`${RUNS} random link requests: 2xx or 4xx in the error format, never 5xx; a refused write changes nothing`, async () => {
    const tables = () => [s.customers, s.orders, s.lines];
    const request = fc.oneof(
      fc.record({ kind: fc.constant('create' as const), table: fc.constantFrom(0, 1, 2), field, value: idValue, expand }),
      fc.record({ kind: fc.constant('patch' as const), table: fc.constantFrom(0, 1, 2), id: ids, field, value: idValue }),
      fc.record({ kind: fc.constant('bulk' as const), table: fc.constantFrom(0, 1, 2), values: fc.array(fc.record({ field, value: idValue }), { minLength: 1, maxLength: 3 }) }),
      fc.record({ kind: fc.constant('batch' as const), ops: fc.array(fc.record({ type: fc.constantFrom('create', 'update', 'delete'), table: fc.constantFrom(0, 1, 2), id: ids, field, value: idValue }), { minLength: 1, maxLength: 3 }), expand }),
      fc.record({ kind: fc.constant('delete' as const), table: fc.constantFrom(0, 1, 2), id: ids }),
      fc.record({ kind: fc.constant('list' as const), table: fc.constantFrom(0, 1, 2), filter: someFilter, expand }),
      fc.record({ kind: fc.constant('aggregate' as const), table: fc.constantFrom(0, 1, 2), filter: someFilter, group: fc.option(field) }),
      fc.record({ kind: fc.constant('export' as const), table: fc.constantFrom(0, 1, 2), filter: someFilter, expand, format: fc.constantFrom('csv', 'jsonl') }),
      fc.record({ kind: fc.constant('import' as const), table: fc.constantFrom(0, 1, 2), field, cell: fc.oneof(ids, fc.constantFrom('[]', '["o1"]', '["o1","o1"]', '[1]', '[', '{}', 'null')), mode: fc.constantFrom('create', 'upsert') }),
      fc.record({ kind: fc.constant('options' as const), table: fc.constantFrom(0, 1, 2), field, multiple: fc.option(fc.oneof({ weight: 4, arbitrary: fc.boolean() }, { weight: 1, arbitrary: scalar })), onDelete: fc.option(fc.oneof({ weight: 4, arbitrary: fc.constantFrom('unlink', 'restrict', 'cascade') }, { weight: 1, arbitrary: scalar })) }),
    );
    let ok = 0;
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const table = tables()['table' in r ? r.table : 0];
        let reply;
        let write = true;
        const before = await snapshot(t, ...tables());
        switch (r.kind) {
          case 'create':
            reply = await t.post(`/api/tables/${table}/rows`, { values: { [fieldOf(r.table, r.field)]: valueOf(fieldOf(r.table, r.field), r.value) } }, { query: expandOf(r.table, r.expand) });
            break;
          case 'patch':
            reply = await t.patch(`/api/tables/${table}/rows/${encodeURIComponent((r.id || 'x').toWellFormed())}`, { values: { [fieldOf(r.table, r.field)]: valueOf(fieldOf(r.table, r.field), r.value) } });
            break;
          case 'bulk':
            reply = await t.post(`/api/tables/${table}/rows-bulk`, { data: r.values.map((v) => ({ values: { [fieldOf(r.table, v.field)]: valueOf(fieldOf(r.table, v.field), v.value) } })) });
            break;
          case 'batch':
            reply = await t.post(
              '/api/rows-batch',
              { operations: r.ops.map((o) => ({ type: o.type, tableId: tables()[o.table], id: o.id, ...(o.type === 'delete' ? {} : { values: { [fieldOf(o.table, o.field)]: valueOf(fieldOf(o.table, o.field), o.value) } }) })) },
              { query: expandOf(r.ops[0].table, r.expand) },
            );
            break;
          case 'delete':
            reply = await t.delete(`/api/tables/${table}/rows/${encodeURIComponent((r.id || 'x').toWellFormed())}`);
            break;
          case 'list':
            write = false;
            reply = await t.get(`/api/tables/${table}/rows`, { query: { filter: filterOf(r.table, r.filter), ...expandOf(r.table, r.expand) } });
            break;
          case 'aggregate':
            write = false;
            reply = await t.get(`/api/tables/${table}/rows-aggregate`, { query: { filter: filterOf(r.table, r.filter), ...(r.group === null ? {} : { groupBy: [{ field: fieldOf(r.table, r.group) }] }) } });
            break;
          case 'export':
            write = false;
            reply = await t.get(`/api/tables/${table}/rows-export`, { query: { format: r.format, encoding: 'utf8', newline: 'lf', filter: filterOf(r.table, r.filter), ...expandOf(r.table, r.expand) } });
            break;
          case 'import': {
            const cell = /[",\n\r]/.test(r.cell) ? `"${r.cell.replaceAll('"', '""')}"` : r.cell;
            reply = await t.request('POST', `/api/tables/${table}/rows-import?format=csv&encoding=utf8&mode=${r.mode}`, { raw: `id,${fieldOf(r.table, r.field)}\nimp,${cell}\n`, headers: { 'content-type': 'text/csv' } });
            break;
          }
          case 'options': {
            const def = await t.get(`/api/tables/${table}`);
            const fields = def.body.fields.map((f: { code: string; options: Record<string, unknown> }) =>
              f.code === fieldOf(r.table, r.field) ? { ...f, options: { ...f.options, ...(r.multiple === null ? {} : { multiple: r.multiple }), ...(r.onDelete === null ? {} : { onDelete: r.onDelete }) } } : f,
            );
            reply = await t.put(`/api/tables/${table}`, { fields });
            break;
          }
        }
        const where = `${JSON.stringify(r)} → ${reply.status} ${reply.text.slice(0, 300)}`;
        assert.ok(reply.status < 500, where);
        if (reply.status >= 400) {
          assert.equal(reply.body?.statusCode, reply.status, where);
          assert.equal(typeof reply.body?.message, 'string', where);
          if (write) assert.deepEqual(await snapshot(t, ...tables()), before, `a refused write changed rows: ${where}`);
        } else ok++;
      }),
      { seed: SEED, numRuns: RUNS },
    );
    assert.ok(ok > RUNS / 10, `${ok} of ${RUNS} answered 2xx: the near-misses never reached the statements`);
  });
});
