import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import fc from 'fast-check';
import { type TestApp, eachDatabase, startApp } from '../support/harness.ts';
import { FIELDS, prng, queryParams, randomQuery } from '../support/reference-aggregates.ts';

/**
 * Bad input never breaks GET /rows-aggregate: random near-misses of every parameter (wrong
 * shapes, types, names, buckets, zones, operators and values, U+0000, huge and odd numbers) each
 * answer 200 or a 400 in the one error format, never a 500, on both databases.
 */

const SEED = Number(process.env.ROWHOUSE_FC_SEED ?? 20_261_130);
const RUNS = Number(process.env.ROWHOUSE_FC_RUNS ?? 150);

const names = fc.constantFrom('s', 't', 'n', 'b', 'dt', 'd', 'ym', 'tm', 'id', 'createdAt', 'nope', 'count', 'sum_n', 'x', '', '__proto__', 'constructor', 'a\u0000', 1, null);
const scalar = fc.oneof(names, fc.constantFrom(0, -1, 1.5, 1e308, -0, 2 ** 63, true, false, '2024-01-01', '2024-01-01T00:00:00Z', '2024-13', '12:00:00', 'a\u0000b', '\ud800', 'Asia/Tokyo', '+09:00', 'Mars/Olympus', 'utc', 'EST5EDT', 'Etc/GMT+5'), fc.string({ maxLength: 4 }), fc.double());
const junk = fc.oneof(scalar, fc.array(scalar, { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 3 }), scalar, { maxKeys: 2 }));
const groupKey = fc.oneof(
  { weight: 4, arbitrary: fc.record({ field: names, bucket: fc.constantFrom('year', 'quarter', 'month', 'week', 'day', 'hour', 'minute', 'Year', 1), timeZone: scalar }, { requiredKeys: ['field'] }) },
  { weight: 1, arbitrary: junk },
);
const metric = fc.oneof(
  { weight: 4, arbitrary: fc.record({ fn: fc.constantFrom('count', 'sum', 'avg', 'min', 'max', 'countDistinct', 'median', 'COUNT', null), field: names, as: scalar }, { requiredKeys: ['fn'] }) },
  { weight: 1, arbitrary: junk },
);
const ops = fc.constantFrom('_eq', '_gt', '_gte', '_lt', '_lte', '_isNull', '_contains', '_ne', 'x');
const condition = fc.oneof(fc.dictionary(ops, scalar, { maxKeys: 2 }), junk);
const having: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  h: fc.oneof(
    { depthSize: 'small', weight: 4, arbitrary: fc.dictionary(names.map(String), condition, { maxKeys: 2 }) },
    { weight: 1, arbitrary: fc.record({ _or: fc.array(tie('h'), { maxLength: 2 }) }) },
    { weight: 1, arbitrary: fc.record({ _not: tie('h') }) },
    { weight: 1, arbitrary: junk },
  ),
})).h;
const sort = fc.oneof(fc.array(fc.dictionary(names.map(String), fc.oneof(fc.record({ direction: fc.constantFrom('asc', 'desc', 'up'), nulls: fc.constantFrom('nullsFirst', 'nullsLast', 'x') }), junk), { maxKeys: 2 }), { maxLength: 3 }), junk);
const filter = fc.oneof(fc.record({ values: fc.dictionary(names.map(String), condition, { maxKeys: 2 }) }), junk);
const json = (a: fc.Arbitrary<unknown>) => fc.option(fc.oneof({ weight: 9, arbitrary: a.map((v) => JSON.stringify(v) ?? 'null') }, { weight: 1, arbitrary: fc.constantFrom('[', '{"a":', '', 'null', '"x"') }), { freq: 3 });

eachDatabase('aggregates: bad input never breaks the route', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await startApp(kind);
    assert.equal((await t.post('/api/tables', { code: 'f', name: 'f', fields: FIELDS })).status, 201);
    const rows = [
      { s: 'a', t: 'x', n: 1e308, b: true, dt: '2024-11-03T06:30:00Z', d: '0001-01-01', ym: '9999-12', tm: '00:00:00' },
      { s: 'b', t: '', n: 1e308, b: false, dt: '9999-12-31T23:59:59.999Z', d: '9999-12-31', ym: '0001-01', tm: '23:59:59' },
      { s: null, n: -0.5, dt: '0001-01-01T00:00:00Z' },
    ];
    assert.equal((await t.post('/api/tables/f/rows-bulk', { data: rows.map((values) => ({ values })) })).status, 201);
  });
  after(() => t.close());

  it(`${RUNS} random requests: 200 or 400, never 500`, async () => {
    let ok = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer(),
        fc.constantFrom('none', 'groupBy', 'metrics', 'filter', 'having', 'sort', 'pageSize', 'cursor'),
        fc.record({ groupBy: json(fc.array(groupKey, { maxLength: 6 })), metrics: json(fc.array(metric, { maxLength: 4 })), filter: json(filter), having: json(having), sort: json(sort), pageSize: fc.option(fc.constantFrom('1', '0', '1000', '1001', 'x', '-1', '2.5'), { freq: 3 }), cursor: fc.option(fc.constantFrom('abc', 'a.b', '.'), { freq: 8 }) }),
        async (seed, corrupted, bad) => {
          // A valid query (test/support/reference-aggregates.ts) with one parameter replaced by a near-miss, or every one.
          const valid = queryParams(randomQuery(prng(seed)));
          const query = Object.fromEntries(
            Object.entries(corrupted === 'none' ? bad : { ...valid, [corrupted]: bad[corrupted as keyof typeof bad] }).filter(([, v]) => v !== null && v !== undefined),
          );
          const r = await t.get('/api/tables/f/rows-aggregate', { query });
          assert.ok(r.status === 200 || r.status === 400, `${r.status} for ${JSON.stringify(query)}: ${r.text.slice(0, 300)}`);
          if (r.status === 400) assert.equal(typeof r.body.message, 'string');
          else {
            ok++;
            assert.ok(Array.isArray(r.body.data), r.text);
          }
        },
      ),
      { seed: SEED, numRuns: RUNS },
    );
    // Near-misses that happen to be valid are answered too: a fuzz that only ever met 400s would miss the statements.
    assert.ok(ok > RUNS / 10, `${ok} of ${RUNS} answered 200`);
  });
});
