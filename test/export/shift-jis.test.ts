import assert from 'node:assert/strict';
import { it } from 'node:test';
import iconv from 'iconv-lite';
import { textEncoder } from '../../src/export/encodings.ts';

it('Shift_JIS: the same bytes as iconv-lite over the whole text, for ASCII, Japanese, unrepresentable and mixed text', () => {
  const encoder = textEncoder('shiftJis');
  const encode = (text: string) => {
    encoder.write(text);
    return encoder.take();
  };
  const ascii = Array.from({ length: 128 }, (_, i) => String.fromCharCode(i)).join('');
  for (const text of ['', ascii, '東京', 'a東b京c', 'café 😀 ①㈱ ｶﾀｶﾅ', '"quoted, 注文"\r\n次の行\t😀😀', 'end with 日本']) {
    assert.deepEqual(encode(text), iconv.encode(text, 'Shift_JIS'), JSON.stringify(text));
  }
  assert.deepEqual([...encode('é😀')], [0x3f, 0x3f]);
});
