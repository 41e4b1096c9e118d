import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import type { FieldDef } from '../../src/domain/field-types/field-type.ts';
import { parseRowFilter } from '../../src/domain/row-filter.ts';
import { matchesRowFilter } from '../../src/domain/row-filter-match.ts';
import type { ErrorDetail } from '../../src/domain/errors.ts';
import { type RefFields, type RefRow, matchesFilter } from '../support/reference-rows.ts';
import type { RowRecord } from '../../src/domain/row.ts';

/**
 * The in-memory row filter (a flow trigger's) against the property tests' reference evaluator,
 * which the database is checked against too: random records and random filters, the same answer.
 */

const FIELDS: RefFields = { t: 'text', n: 'number', b: 'boolean', d: 'dateTime', day: 'date', l: 'list', s: 'select' };
const defs: FieldDef[] = Object.entries(FIELDS).map(([code, type]) => ({
  id: `id-${code}`, code, name: code, type, required: false, options: type === 'select' ? { choices: ['a', 'B', '日本', '😀'] } : {},
}));
const table = { id: 'table', fields: defs, fieldsByCode: new Map(defs.map((f) => [f.code, f])) };

const TEXTS = ['', 'a', 'ab', 'A', 'B', '日本', '😀', '\uff01', '%', 'a%b', 'é', 'e\u0301'];
const INSTANTS = ['2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.001Z', '1999-12-31T23:59:59.999Z'];
const OPERAND_INSTANTS = [...INSTANTS, '2024-01-01T09:00:00+09:00', '2023-12-31T19:00:00.001-05:00'];
const DATES = ['2024-01-01', '2024-02-29', '1999-12-31'];
const LIST = ['a', '1', 'true', 1, 0, true, false];
const NUMBERS = [-1.5, 0, 0.5, 1, 2, 1e15];

const nullable = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: null, freq: 4 });
const recordArb: fc.Arbitrary<RowRecord> = fc.record({
  id: fc.constantFrom('r1', 'r2', 'R', '😀'),
  createdAt: fc.constantFrom(...INSTANTS),
  updatedAt: fc.constantFrom(...INSTANTS),
  createdBy: fc.constantFrom('a', 'B'),
  updatedBy: fc.constantFrom('a', 'B'),
  values: fc.record({
    t: nullable(fc.constantFrom(...TEXTS)),
    n: nullable(fc.constantFrom(...NUMBERS)),
    b: nullable(fc.boolean()),
    d: nullable(fc.constantFrom(...INSTANTS)),
    day: nullable(fc.constantFrom(...DATES)),
    l: nullable(fc.array(fc.constantFrom(...LIST), { maxLength: 3 })),
    s: nullable(fc.constantFrom('a', 'B', '日本', '😀')),
  }),
});

const order = ['_eq', '_gt', '_gte', '_lt', '_lte'] as const;
const textOps = [...order, '_contains', '_startsWith', '_endsWith'] as const;
const condArb = (key: string): fc.Arbitrary<Record<string, unknown>> => {
  const isNull = fc.record({ _isNull: fc.boolean() });
  const ops = (names: readonly string[], operand: fc.Arbitrary<unknown>) =>
    fc.oneof({ weight: 4, arbitrary: fc.tuple(fc.constantFrom(...names), operand).map(([op, v]) => ({ [op]: v })) }, { weight: 1, arbitrary: isNull });
  switch (key) {
    case 't': case 'id': case 'createdBy': return ops(textOps, fc.constantFrom(...TEXTS, 'r', 'R'));
    case 's': return ops(textOps, fc.constantFrom('a', 'B', '日', '😀'));
    case 'n': return ops(order, fc.constantFrom(...NUMBERS));
    case 'b': return ops(['_eq'], fc.boolean());
    case 'd': case 'createdAt': return ops(order, fc.constantFrom(...OPERAND_INSTANTS));
    case 'day': return ops(order, fc.constantFrom(...DATES));
    default: return ops(['_contains'], fc.constantFrom(...LIST));
  }
};
const leafArb: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  fc.constantFrom('t', 'n', 'b', 'd', 'day', 'l', 's').chain((code) => condArb(code).map((c) => ({ values: { [code]: c } }))),
  fc.constantFrom('id', 'createdAt', 'createdBy').chain((key) => condArb(key).map((c) => ({ [key]: c }))),
);
const { filter: filterArb } = fc.letrec<{ filter: Record<string, unknown> }>((tie) => ({
  filter: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leafArb,
    fc.array(tie('filter'), { minLength: 1, maxLength: 3 }).map((items) => ({ _and: items })),
    fc.array(tie('filter'), { minLength: 1, maxLength: 3 }).map((items) => ({ _or: items })),
    tie('filter').map((f) => ({ _not: f })),
  ),
}));

it('answers as the reference evaluator on random records and filters', () => {
  fc.assert(
    fc.property(fc.array(recordArb, { minLength: 1, maxLength: 5 }), filterArb, (records, raw) => {
      const details: ErrorDetail[] = [];
      const filter = parseRowFilter(raw, table, details);
      assert.deepEqual(details, [], JSON.stringify(raw));
      for (const record of records) {
        const expected = matchesFilter(FIELDS, record as unknown as RefRow, raw);
        assert.equal(matchesRowFilter(filter!, record), expected, `${JSON.stringify(raw)} on ${JSON.stringify(record)}`);
      }
    }),
    { seed: 20_240_501, numRuns: 2000 },
  );
});

it('treats a comparison with null as false, and _not as its exact complement', () => {
  const record: RowRecord = { id: 'r', createdAt: INSTANTS[0], updatedAt: INSTANTS[0], createdBy: 'a', updatedBy: 'a', values: { t: null, n: 3 } };
  const f = (raw: unknown) => parseRowFilter(raw, table, [])!;
  assert.equal(matchesRowFilter(f({ values: { t: { _eq: 'x' } } }), record), false);
  assert.equal(matchesRowFilter(f({ _not: { values: { t: { _eq: 'x' } } } }), record), true);
  assert.equal(matchesRowFilter(f({ values: { n: { _gt: 1, _lt: 5 } } }), record), true);
  assert.equal(matchesRowFilter(f({ values: { n: { _gt: 1, _lt: 3 } } }), record), false);
});
