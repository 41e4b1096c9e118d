import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import iconv from 'iconv-lite';
import type { Field } from '../../console/src/types.ts';
import { linkIds, textValue, valueText } from '../../console/src/field-types.ts';
import { fromApiFilter, toApiFilter } from '../../console/src/filter-model.ts';
import { aggregateQuery, bucketsOf, metricFields, points } from '../../console/src/insight/aggregate-model.ts';
import { sniffEncoding } from '../../console/src/encoding-sniff.ts';

/** The console's pure modules added with links, charts and imports (console/src). */

const field = (code: string, type: Field['type'], options: Record<string, unknown> = {}): Field => ({ code, name: code, type, options });

describe('console: link values and link filters', () => {
  it('shows a link as its ids and reads typed ids back in the link’s form', () => {
    const many = field('tasks', 'link', { multiple: true });
    const one = field('customer', 'link', { multiple: false });
    assert.deepEqual(linkIds(['a', 'b']), ['a', 'b']);
    assert.deepEqual(linkIds(null), []);
    assert.equal(valueText(many, ['a', 'b']), 'a, b');
    assert.equal(valueText(one, 'c1'), 'c1');
    assert.deepEqual(textValue(many, 'a, b  c'), ['a', 'b', 'c']);
    assert.equal(textValue(one, ' c1 '), 'c1');
    assert.equal(textValue(many, ''), null);
  });

  it('writes a condition looking through a link as the linked table’s filter, and reads it back', () => {
    const fields = [field('tasks', 'link', { multiple: true })];
    const json = { values: { tasks: { _some: { values: { points: { _gt: 6 } } } } } };
    const group = fromApiFilter(json);
    assert.deepEqual(toApiFilter(group, fields), json);
    assert.deepEqual(toApiFilter({ kind: 'group', join: 'and', not: false, items: [{ kind: 'condition', key: 'tasks', op: '_none', value: '{"id":{"_eq":"t1"}}' }] }, fields), { values: { tasks: { _none: { id: { _eq: 't1' } } } } });
  });
});

describe('console: the chart’s aggregate', () => {
  it('asks for one group key (with its bucket) and one metric, over the view’s filter', () => {
    const q = new URLSearchParams(aggregateQuery({ groupBy: 'due', bucket: 'month', fn: 'sum', field: 'points' }, '{"values":{"points":{"_gt":1}}}'));
    assert.deepEqual(JSON.parse(q.get('groupBy') as string), [{ field: 'due', bucket: 'month' }]);
    assert.deepEqual(JSON.parse(q.get('metrics') as string), [{ fn: 'sum', field: 'points', as: 'value' }]);
    assert.equal(q.get('filter'), '{"values":{"points":{"_gt":1}}}');
    const count = new URLSearchParams(aggregateQuery({ groupBy: 'status', bucket: '', fn: 'count', field: '' }, null));
    assert.deepEqual(JSON.parse(count.get('groupBy') as string), [{ field: 'status' }]);
    assert.deepEqual(JSON.parse(count.get('metrics') as string), [{ fn: 'count', as: 'value' }]);
    assert.equal(count.get('filter'), null);
  });

  it('offers the buckets and metric fields the API takes, and labels the groups', () => {
    assert.deepEqual(bucketsOf('date'), ['', 'year', 'quarter', 'month', 'week', 'day']);
    assert.ok(bucketsOf('dateTime').includes('hour'));
    assert.deepEqual(bucketsOf('yearMonth'), ['', 'year', 'quarter', 'month']);
    assert.deepEqual(bucketsOf('text'), ['']);
    const fields = [field('n', 'number'), field('t', 'text'), field('r', 'record'), field('l', 'link', { multiple: true })];
    assert.deepEqual(metricFields('sum', fields).map((f) => f.code), ['n']);
    assert.deepEqual(metricFields('max', fields).map((f) => f.code), ['n', 't']);
    assert.deepEqual(metricFields('countDistinct', fields).map((f) => f.code), ['n', 't']);
    assert.deepEqual(points([{ group: { due: '2026-01' }, metrics: { value: 8 } }, { group: { due: null }, metrics: { value: null } }], 'due'), [
      { label: '2026-01', value: 8 },
      { label: '(empty)', value: null },
    ]);
  });
});

describe('console: an import file’s encoding', () => {
  it('tells a UTF-8 BOM, UTF-8 (even cut mid-character) and Shift_JIS apart', () => {
    assert.equal(sniffEncoding(new Uint8Array([0xef, 0xbb, 0xbf, 0x61])).encoding, 'utf8Bom');
    const utf8 = Buffer.from('id,title\nj1,日本語');
    assert.equal(sniffEncoding(utf8).encoding, 'utf8');
    assert.equal(sniffEncoding(utf8.subarray(0, utf8.length - 1)).encoding, 'utf8', 'a sample cut inside a character');
    assert.equal(sniffEncoding(iconv.encode('id,title\nj1,日本語のタスク', 'Shift_JIS')).encoding, 'shiftJis');
    assert.equal(sniffEncoding(Buffer.from('plain ascii')).encoding, 'utf8');
  });
});
