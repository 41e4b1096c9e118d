import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import iconv from 'iconv-lite';
import type { Field } from '../../console/src/types.ts';
import { linkIds, textValue, valueText } from '../../console/src/field-types.ts';
import { fromApiFilter, toApiFilter } from '../../console/src/filter-model.ts';
import { aggregateQuery, bucketsOf, metricFields, points } from '../../console/src/insight/aggregate-model.ts';
import { sniffEncoding } from '../../console/src/encoding-sniff.ts';
import { type ApiKey, refusal } from '../../console/src/scopes.ts';
import { uploadTarget } from '../../console/src/upload-target.ts';

/** The console's pure modules added with links, charts, imports, scoped keys and uploads (console/src). */

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

describe('console: what a key may do, before it is tried', () => {
  const key = (scopes: string[], tables: string[]): ApiKey => ({
    id: 'k1', createdAt: '', updatedAt: '', createdBy: '', updatedBy: '', name: 'k', memberId: 'm', prefix: 'rh_abcde',
    expiresAt: null, lastUsedAt: null, revokedAt: null, rateLimit: null, scopes, tables,
  });
  const notes = { id: 'tbl_notes', code: 'notes', name: 'Notes' };
  const other = { id: 'tbl_other', code: null, name: 'Other' };

  it('allows everything to a key with every scope on every table', () => {
    for (const scope of ['rows:create', 'rows:update', 'schema:write', 'keys:manage']) assert.equal(refusal(key(['*'], ['*']), scope, notes), null, scope);
  });

  it('names the scope a key lacks', () => {
    const reader = key(['rows:read', 'schema:read'], ['*']);
    assert.equal(refusal(reader, 'rows:read', notes), null);
    assert.equal(refusal(reader, 'rows:update', notes), 'Your key lacks rows:update on table notes');
    assert.equal(refusal(reader, 'rows:update'), 'Your key lacks rows:update');
    assert.equal(refusal(reader, 'flows:read', notes), 'Your key lacks flows:read', 'a scope of no table');
    assert.equal(refusal(reader, 'schema:write'), 'Your key lacks schema:write on every table');
  });

  it('applies row scopes to the key’s tables only, and schema:write to a key of every table only', () => {
    const writer = key(['rows:read', 'rows:create', 'schema:write'], ['tbl_notes']);
    assert.equal(refusal(writer, 'rows:create', notes), null);
    assert.equal(refusal(writer, 'rows:create', other), 'Your key lacks rows:create on table Other');
    assert.equal(refusal(key(['*'], ['tbl_notes']), 'rows:delete', { ...other, code: 'others' }), 'Your key lacks rows:delete on table others');
    assert.equal(refusal(writer, 'schema:write'), 'Your key lacks schema:write on every table', 'the scope, but not on every table');
    assert.equal(refusal(key(['schema:write'], ['*']), 'schema:write'), null);
  });
});

describe('console: where an upload’s bytes may go', () => {
  const origins = { page: 'http://127.0.0.1:3000', service: 'https://rowhouse.example', bucket: 'https://files.s3.eu-west-1.amazonaws.com' };

  it('sends the service’s own URLs to this page’s origin, by either name, and the bucket’s as given', () => {
    assert.equal(uploadTarget('https://rowhouse.example/files/upload/t/r/f?signature=abc', origins), '/files/upload/t/r/f?signature=abc');
    assert.equal(uploadTarget('http://127.0.0.1:3000/files/upload/t/r/f?e=1', origins), '/files/upload/t/r/f?e=1');
    const bucket = 'https://files.s3.eu-west-1.amazonaws.com/t/tbl_1/file_1/upload?X-Amz-Signature=00';
    assert.equal(uploadTarget(bucket, origins), bucket);
  });

  it('refuses any other origin, naming it and the ones it may be, whatever its path', () => {
    for (const url of ['https://evil.example/files/upload/t/r/f', 'http://rowhouse.example/files/x', 'https://files.s3.eu-west-1.amazonaws.com.evil.example/t/x', 'https://rowhouse.example:8443/files/x']) {
      assert.throws(() => uploadTarget(url, origins), (err: Error) => {
        assert.match(err.message, new RegExp(`^Not uploaded: the upload URL names ${new URL(url).origin.replace(/[.]/g, '\\.')}, which is neither this service nor its files' bucket`));
        assert.match(err.message, /http:\/\/127\.0\.0\.1:3000, https:\/\/rowhouse\.example, https:\/\/files\.s3/);
        return true;
      }, url);
    }
    assert.throws(() => uploadTarget('https://files.s3.eu-west-1.amazonaws.com/t/x', { ...origins, bucket: null }), /names https:\/\/files\.s3\.eu-west-1\.amazonaws\.com, which is neither/);
  });
});
