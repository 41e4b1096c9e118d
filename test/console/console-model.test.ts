import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { detailTarget } from '../../console/src/error-details.ts';
import type { Field } from '../../console/src/types.ts';
import { textValue, valueText } from '../../console/src/field-types.ts';
import { emptyGroup, fromApiFilter, toApiFilter } from '../../console/src/filter-model.ts';
import { parseTsv, toTsv } from '../../console/src/tsv.ts';

/** The console's pure modules (console/src): pasted cells, filters to and from the API's JSON, values as text. */

const field = (code: string, type: Field['type'], options: Record<string, unknown> = {}): Field => ({ code, name: code, type, options });
const fields = [field('amount', 'number'), field('status', 'select', { choices: ['new', 'open'] }), field('paid', 'boolean'), field('title', 'text')];

describe('console: tab-separated cells', () => {
  it('reads what spreadsheets copy: quoted cells with tabs, line breaks and quotes; CRLF; no empty row for the last line break', () => {
    assert.deepEqual(parseTsv('a\tb\r\nc\td\r\n'), [['a', 'b'], ['c', 'd']]);
    assert.deepEqual(parseTsv('"x\ty"\t"line 1\nline 2"\t"say ""hi"""\nlast\t'), [['x\ty', 'line 1\nline 2', 'say "hi"'], ['last', '']]);
    assert.deepEqual(parseTsv('a "b" c\td'), [['a "b" c', 'd']], 'a quote inside a cell is text');
    assert.deepEqual(parseTsv(''), []);
  });

  it('writes what it reads, whatever the cells', () => {
    const cell = fc.string({ unit: fc.constantFrom('a', 'b', ' ', '\t', '\n', '\r', '"', 'é') });
    fc.assert(
      fc.property(fc.array(fc.array(cell, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 4 }), (rows) => {
        // A single empty cell on a line reads as no line: keep rows with some text.
        fc.pre(rows.every((r) => r.length > 1 || r[0] !== ''));
        assert.deepEqual(parseTsv(toTsv(rows)), rows);
      }),
    );
  });
});

describe('console: the filter builder and the API filter', () => {
  it('writes groups as _and, _or and _not, with values of the field’s type', () => {
    const group = {
      ...emptyGroup(),
      items: [
        { kind: 'condition' as const, key: 'amount', op: '_gt' as const, value: '4' },
        { kind: 'group' as const, join: 'or' as const, not: true, items: [
          { kind: 'condition' as const, key: 'status', op: '_eq' as const, value: 'new' },
          { kind: 'condition' as const, key: 'paid', op: '_eq' as const, value: 'true' },
          { kind: 'condition' as const, key: 'createdAt', op: '_lt' as const, value: '2026-01-01T00:00:00Z' },
          { kind: 'condition' as const, key: 'title', op: '_isNull' as const, value: 'false' },
        ] },
      ],
    };
    const json = toApiFilter(group, fields);
    assert.deepEqual(json, {
      _and: [
        { values: { amount: { _gt: 4 } } },
        { _not: { _or: [{ values: { status: { _eq: 'new' } } }, { values: { paid: { _eq: true } } }, { createdAt: { _lt: '2026-01-01T00:00:00Z' } }, { values: { title: { _isNull: false } } }] } },
      ],
    });
    assert.deepEqual(fromApiFilter(json), group, 'read back as the groups it was written from');
    assert.equal(toApiFilter(emptyGroup(), fields), null);
  });

  it('reads any filter the API takes, the keys of one object as all of them', () => {
    const read = fromApiFilter({ values: { amount: { _gte: 1, _lt: 10 } }, id: { _startsWith: 'o-' } });
    assert.equal(read.join, 'and');
    assert.deepEqual(read.items.map((c) => (c.kind === 'condition' ? [c.key, c.op, c.value] : null)), [['amount', '_gte', '1'], ['amount', '_lt', '10'], ['id', '_startsWith', 'o-']]);
    assert.deepEqual(toApiFilter(read, fields), { _and: [{ values: { amount: { _gte: 1 } } }, { values: { amount: { _lt: 10 } } }, { id: { _startsWith: 'o-' } }] });
    assert.throws(() => fromApiFilter([1]), /JSON object/);
  });
});

describe('console: values as text', () => {
  it('turns typed text into the value to write, and leaves text that is not of the type for the service to refuse', () => {
    const [amount, , paid] = fields;
    assert.equal(textValue(amount, ' 12.5 '), 12.5);
    assert.equal(textValue(amount, 'lots'), 'lots');
    assert.equal(textValue(amount, '0x10'), '0x10');
    assert.equal(textValue(amount, ''), null);
    assert.equal(textValue(paid, 'Yes'), true);
    assert.equal(textValue(paid, 'maybe'), 'maybe');
    assert.deepEqual(textValue(field('m', 'record'), '{"a":1}'), { a: 1 });
    assert.equal(textValue(field('m', 'record'), '{bad'), '{bad');
    assert.equal(textValue(field('t', 'text'), '  kept as typed '), '  kept as typed ');
    assert.equal(valueText(field('l', 'list'), [1, 'a']), '[1,"a"]');
    assert.equal(valueText(field('f', 'file'), { id: 'x', name: 'a "b".pdf' }), 'a "b".pdf');
    assert.equal(valueText(amount, null), '');
  });

  it('finds the row and field a 400’s detail names', () => {
    assert.deepEqual(detailTarget('values.amount'), { index: null, field: 'amount' });
    assert.deepEqual(detailTarget('data[3].values.amount'), { index: 3, field: 'amount' });
    assert.deepEqual(detailTarget('operations[2].values.title'), { index: 2, field: 'title' });
    assert.equal(detailTarget('id'), null);
  });
});
