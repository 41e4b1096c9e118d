import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, it } from 'node:test';
import { JIS_TO_CP932 } from '../../src/export/cp932.ts';
import { textEncoder } from '../../src/export/encodings.ts';
import { TEST_KEY, type TestApp, eachDatabase, startApp } from '../support/harness.ts';

/**
 * `encoding=shiftJis` is Windows-31J (CP932), issue 16 "Export fidelity": exports through the HTTP
 * API, read back with a reference decoder that is not the encoder under test (Python's `cp932`
 * codec, strict, as Excel reads such a file), compared character for character and byte for byte.
 */

/** Runs a Python 3 script with the bytes on stdin; its stdout is UTF-8. A missing python3 fails the test. */
function python(script: string, input: Buffer = Buffer.alloc(0)): string {
  const r = spawnSync('python3', ['-c', script], { input, maxBuffer: 64 * 2 ** 20 });
  if (r.error) throw new Error(`python3 is needed as the reference decoder: ${r.error.message}`);
  assert.equal(r.status, 0, r.stderr.toString());
  return r.stdout.toString('utf8');
}

/** The bytes decoded by Python's cp932 codec with errors='strict': a byte sequence CP932 does not define throws. */
const decodeCp932 = (bytes: Buffer) =>
  python(`import sys; sys.stdout.buffer.write(sys.stdin.buffer.read().decode('cp932', 'strict').encode('utf-8'))`, bytes);

/** Every code point some byte sequence of CP932 decodes to, per Python's cp932 codec. */
function cp932Repertoire(): Set<number> {
  const script = `
import json
s = set()
for b in range(256):
    try: s.add(ord(bytes([b]).decode('cp932')))
    except UnicodeDecodeError: pass
for lead in range(0x81, 0x100):
    for trail in range(0x40, 0x100):
        try: c = bytes([lead, trail]).decode('cp932')
        except UnicodeDecodeError: continue
        if len(c) == 1: s.add(ord(c))
print(json.dumps(sorted(s)))`;
  return new Set(JSON.parse(python(script)) as number[]);
}

/** The JIS-flavoured code points and the CP932 ones written at the same bytes (issue 16; written out here, not read from src). */
const JIS_FLAVOURED: [from: number, cp932: number, bytes: number[]][] = [
  [0x301c, 0xff5e, [0x81, 0x60]], // WAVE DASH → FULLWIDTH TILDE
  [0x2212, 0xff0d, [0x81, 0x7c]], // MINUS SIGN → FULLWIDTH HYPHEN-MINUS
  [0x2014, 0x2015, [0x81, 0x5c]], // EM DASH → HORIZONTAL BAR
  [0x2016, 0x2225, [0x81, 0x61]], // DOUBLE VERTICAL LINE → PARALLEL TO
  [0x00a2, 0xffe0, [0x81, 0x91]], // CENT SIGN → FULLWIDTH CENT SIGN
  [0x00a3, 0xffe1, [0x81, 0x92]], // POUND SIGN → FULLWIDTH POUND SIGN
  [0x00ac, 0xffe2, [0x81, 0xca]], // NOT SIGN → FULLWIDTH NOT SIGN
];

/** Single characters and their exact bytes: the mapped ones, CP932's own at the same bytes, the extensions, kana, and `?`. */
const BYTES: [text: string, bytes: number[]][] = [
  ...JIS_FLAVOURED.flatMap(([from, cp932, bytes]): [string, number[]][] => [[String.fromCodePoint(from), bytes], [String.fromCodePoint(cp932), bytes]]),
  ['①', [0x87, 0x40]], // NEC row 13
  ['⑳', [0x87, 0x53]],
  ['㈱', [0x87, 0x8a]],
  ['Ⅰ', [0x87, 0x54]], // NEC row 13, not its IBM copy 0xFA4A
  ['ⅰ', [0xfa, 0x40]], // IBM extension, as Windows writes it (Python's own cp932 encoder writes the NEC-selected copy 0xEEEF)
  ['髙', [0xfb, 0xfc]], // IBM extension (Python: 0xEEE0)
  ['﨑', [0xfa, 0xb1]], // IBM extension (Python: 0xED95)
  ['∵', [0x81, 0xe6]], // JIS X 0208 row 2, not NEC row 13 0x879A
  ['ｶ', [0xb6]], // half-width katakana
  ['ﾟ', [0xdf]],
  ['¥', [0x5c]], // JIS X 0201's yen byte (iconv-lite); cp932 reads it back as a backslash
  ['東', [0x93, 0x8c]],
  ['😀', [0x3f]], // one ? per character, not per UTF-16 unit
  ['é', [0x3f]],
  ['𠀋', [0x3f]], // JIS X 0213, not CP932
  ['\ue000', [0x3f]], // private use: not written as CP932's user-defined area
];

/** Text as typed, and as Excel (Python's cp932) must read it back. */
const TEXTS: [typed: string, read: string][] = [
  ['10時〜12時', '10時～12時'],
  ['気温−5℃、差は‖a‖—b', '気温－5℃、差は∥a∥―b'],
  ['¢99 £5 ¬A ￠￡￢', '￠99 ￡5 ￢A ￠￡￢'],
  ['髙橋さんと﨑山さん ①② ㈱ Ⅹ ⅲ', '髙橋さんと﨑山さん ①② ㈱ Ⅹ ⅲ'],
  ['ｶﾀｶﾅとカタカナ', 'ｶﾀｶﾅとカタカナ'],
  ['ok 😀 done 🗼!', 'ok ? done ?!'],
  ['〜〜−−', '～～－－'],
];

it('the table in src/export/cp932.ts: each entry says the bytes the encoder writes, at any place in the text', () => {
  const encoder = textEncoder('shiftJis');
  const encode = (text: string) => {
    encoder.write(text);
    return encoder.take();
  };
  assert.deepEqual(
    JIS_TO_CP932.map((e) => [e.from.codePointAt(0), e.to.codePointAt(0), [e.bytes >> 8, e.bytes & 0xff]]).sort(),
    JIS_FLAVOURED.map((e) => [...e]).sort(),
  );
  for (const e of JIS_TO_CP932) {
    const b = [e.bytes >> 8, e.bytes & 0xff];
    assert.deepEqual([...encode(e.from)], b, e.name);
    assert.deepEqual([...encode(`a${e.from}`)], [0x61, ...b], e.name);
    assert.deepEqual([...encode(`${e.from}z`)], [...b, 0x7a], e.name);
    assert.deepEqual([...encode(`東${e.from}${e.from}京`)], [0x93, 0x8c, ...b, ...b, 0x8b, 0x9e], e.name);
  }
});

eachDatabase('export: shiftJis is Windows-31J (CP932)', (kind) => {
  let t: TestApp;
  let seq = 0;
  before(async () => {
    t = await startApp(kind);
  });
  after(() => t.close());

  /** A table with one text field `v` holding each text, keyed by the given ids. */
  async function tableOf(rows: { id: string; v: string }[]): Promise<string> {
    const code = `cp932_${++seq}`;
    const made = await t.post('/api/tables', { code, name: code, fields: [{ code: 'v', type: 'text' }] });
    assert.equal(made.status, 201, made.text);
    const written = await t.post(`/api/tables/${code}/rows-bulk`, { data: rows.map((r) => ({ id: r.id, values: { v: r.v } })) });
    assert.equal(written.status, 201, written.text);
    return code;
  }

  /** The raw bytes of a CSV Shift_JIS export, LF newlines, no header. */
  async function exportSjis(code: string): Promise<Buffer> {
    const q = new URLSearchParams({ format: 'csv', encoding: 'shiftJis', newline: 'lf', header: 'false' });
    const res = await t.app.inject({ method: 'GET', url: `/api/tables/${code}/rows-export?${q}`, headers: { 'x-api-key': TEST_KEY } });
    assert.equal(res.statusCode, 200, res.body.slice(0, 300));
    assert.equal(res.headers['content-type'], 'text/csv; charset=shift_jis');
    return res.rawPayload;
  }

  /**
   * The `v` cell of each line, by row id, as bytes. CP932 trail bytes are 0x40 or above, so 0x2C
   * (comma) and 0x0A (LF) bytes are always the ASCII characters; no cell here needs quoting.
   */
  function cellBytes(raw: Buffer): Map<string, Buffer> {
    const out = new Map<string, Buffer>();
    let start = 0;
    for (let end = raw.indexOf(0x0a); end !== -1; start = end + 1, end = raw.indexOf(0x0a, start)) {
      const line = raw.subarray(start, end);
      let at = 0;
      for (let i = 0; i < 5; i++) at = line.indexOf(0x2c, at) + 1;
      out.set(line.subarray(0, line.indexOf(0x2c)).toString('latin1'), line.subarray(at));
    }
    assert.equal(start, raw.length, 'the export ends with a newline');
    return out;
  }

  it('each mapped, extension, kana and unrepresentable character: exact bytes, and Python cp932 reads them back', async () => {
    const rows = BYTES.map(([v], i) => ({ id: `b${String(i).padStart(2, '0')}`, v }));
    const raw = await exportSjis(await tableOf(rows));
    const cells = cellBytes(raw);
    for (const [i, [text, bytes]] of BYTES.entries()) {
      const name = `U+${text.codePointAt(0)?.toString(16).toUpperCase()} ${text}`;
      assert.deepEqual([...(cells.get(rows[i].id) as Buffer)], bytes, name);
    }
    // The whole file is valid CP932 (strict decoding throws otherwise) and reads back as expected.
    const text = decodeCp932(raw);
    const read = new Map(text.split('\n').slice(0, -1).map((line) => [line.split(',')[0], line.split(',')[5]]));
    const cp932Of = new Map(JIS_FLAVOURED.map(([from, cp932]) => [String.fromCodePoint(from), String.fromCodePoint(cp932)]));
    const special: Record<string, string> = { '¥': '\\', '😀': '?', é: '?', '𠀋': '?', '\ue000': '?' };
    for (const [i, [typed]] of BYTES.entries()) {
      assert.equal(read.get(rows[i].id), special[typed] ?? cp932Of.get(typed) ?? typed, `U+${typed.codePointAt(0)?.toString(16)}`);
    }
  });

  it('text as typed on macOS or from JIS sources reads back in Excel as the characters meant, emoji as ?', async () => {
    const rows = TEXTS.map(([v], i) => ({ id: `t${i}`, v }));
    const raw = await exportSjis(await tableOf(rows));
    assert.ok(!raw.includes(Buffer.from('〜', 'utf8')) && !raw.includes(Buffer.from('時', 'utf8')), 'no UTF-8 leaks through');
    const lines = decodeCp932(raw).split('\n');
    assert.equal(lines.pop(), '');
    const read = new Map(lines.map((line) => [line.split(',')[0], line.split(',').slice(5).join(',')]));
    for (const [i, [typed, want]] of TEXTS.entries()) assert.equal(read.get(rows[i].id), want, typed);
    // "10時〜12時" byte for byte: 1 0 時 ～ 1 2 時.
    assert.deepEqual([...(cellBytes(raw).get('t0') as Buffer)], [0x31, 0x30, 0x8e, 0x9e, 0x81, 0x60, 0x31, 0x32, 0x8e, 0x9e]);
  });

  it('every non-ASCII BMP character: what CP932 holds reads back as itself, the JIS-flavoured ones as CP932 spells them, the rest as ?', async () => {
    const repertoire = cp932Repertoire();
    const cp932Of = new Map(JIS_FLAVOURED.map(([from, cp932]) => [from, cp932]));
    let all = '';
    let want = '';
    for (let c = 0x80; c <= 0xffff; c++) {
      if (c >= 0xd800 && c <= 0xdfff) continue;
      all += String.fromCharCode(c);
      let read: number;
      if (cp932Of.has(c)) read = cp932Of.get(c) as number;
      else if (c === 0xa5) read = 0x5c; // ¥: JIS X 0201's 0x5C, read by cp932 as a backslash
      else if (c === 0x203e) read = 0x7e; // ‾: JIS X 0201's 0x7E, read as a tilde
      else if (c >= 0xe000 && c <= 0xf8ff) read = 0x3f; // private use (CP932's user-defined area and Apple's F8F0–F8F3): ?
      else read = repertoire.has(c) ? c : 0x3f;
      want += String.fromCharCode(read);
    }
    const raw = await exportSjis(await tableOf([{ id: 'bmp', v: all }]));
    const line = decodeCp932(raw);
    const got = line.slice(line.split(',', 5).join(',').length + 1, -1);
    if (got !== want) {
      let i = 0;
      while (got[i] === want[i]) i++;
      assert.fail(`first difference at U+${all.charCodeAt(i).toString(16)}: read U+${got.charCodeAt(i).toString(16)}, want U+${want.charCodeAt(i).toString(16)}`);
    }
    // Each character is one character read back; most of CP932's repertoire is in there.
    assert.equal(got.length, all.length);
    assert.ok(repertoire.size > 7900, `${repertoire.size}`);
  });
});
