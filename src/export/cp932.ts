/**
 * Windows-31J (CP932), the Shift_JIS that Excel and Windows read, for `encoding=shiftJis` exports.
 *
 * iconv-lite's `cp932` codec (one codec with its `shift_jis` and `windows-31j` labels) is the base:
 * it holds the NEC row 13 (①, ㈱, Ⅰ), the NEC-selected and IBM extensions (髙, 﨑), half-width
 * katakana, and writes ¥ U+00A5 and ‾ U+203E as the JIS X 0201 bytes 0x5C and 0x7E. For a
 * character found twice in CP932 it writes the copy that Windows and the WHATWG Encoding Standard
 * write: the IBM extension (0xFA40…) rather than the NEC-selected one (0xED40…), JIS X 0208 row 2
 * rather than NEC row 13. (Python's `cp932` encoder writes the NEC-selected copies; both decode to
 * the same characters.)
 *
 * What it lacks are the code points that JIS mappings give seven positions of JIS X 0208 row 1,
 * where CP932's mapping (Microsoft's CP932.TXT, which iconv-lite and Python's `cp932` follow) has
 * other, mostly fullwidth, code points: the well-known "wave dash problem" list. Text typed on macOS
 * or converted from JIS sources holds them, and iconv-lite writes `?` for them. Each is written as
 * the CP932 character at the same position, so Excel shows what was typed. The JIS side of each
 * row can be checked in glibc's charmaps (localedata/charmaps/SHIFT_JIS and SHIFT_JISX0213) and in
 * Python's `shift_jis` codec; the CP932 side in Python's `cp932` codec.
 */
export const JIS_TO_CP932: readonly { from: string; to: string; bytes: number; name: string }[] = [
  // 0x8160 (JIS 1-33): JIS U+301C WAVE DASH, CP932 U+FF5E FULLWIDTH TILDE ("10時〜12時").
  { from: '\u301c', to: '\uff5e', bytes: 0x8160, name: 'WAVE DASH' },
  // 0x8161 (JIS 1-34): JIS U+2016 DOUBLE VERTICAL LINE, CP932 U+2225 PARALLEL TO.
  { from: '\u2016', to: '\u2225', bytes: 0x8161, name: 'DOUBLE VERTICAL LINE' },
  // 0x817C (JIS 1-61): JIS U+2212 MINUS SIGN, CP932 U+FF0D FULLWIDTH HYPHEN-MINUS.
  { from: '\u2212', to: '\uff0d', bytes: 0x817c, name: 'MINUS SIGN' },
  // 0x815C (JIS 1-29): JIS X 0213 (glibc SHIFT_JISX0213) U+2014 EM DASH, CP932 U+2015 HORIZONTAL
  // BAR. Older JIS mappings (glibc SHIFT_JIS, Python's shift_jis) say U+2015 as CP932 does.
  { from: '\u2014', to: '\u2015', bytes: 0x815c, name: 'EM DASH' },
  // 0x8191 (JIS 1-81): JIS U+00A2 CENT SIGN, CP932 U+FFE0 FULLWIDTH CENT SIGN.
  { from: '\u00a2', to: '\uffe0', bytes: 0x8191, name: 'CENT SIGN' },
  // 0x8192 (JIS 1-82): JIS U+00A3 POUND SIGN, CP932 U+FFE1 FULLWIDTH POUND SIGN.
  { from: '\u00a3', to: '\uffe1', bytes: 0x8192, name: 'POUND SIGN' },
  // 0x81CA (JIS 2-44): JIS U+00AC NOT SIGN, CP932 U+FFE2 FULLWIDTH NOT SIGN.
  { from: '\u00ac', to: '\uffe2', bytes: 0x81ca, name: 'NOT SIGN' },
  // Not listed: 0x5C and 0x7E, JIS X 0201's ¥ U+00A5 and ‾ U+203E, which iconv-lite already writes
  // there (a cp932 decoder reads them back as \ and ~; Japanese fonts show 0x5C as ¥).
];

const BY_FROM = new Map(JIS_TO_CP932.map((e) => [e.from, e.to]));
const JIS_FLAVOURED = new RegExp(`[${JIS_TO_CP932.map((e) => e.from).join('')}]`, 'g');

/** The text with every JIS-flavoured code point of the table replaced by CP932's own; one native regex pass. */
export function toCp932Spelling(text: string): string {
  return text.replace(JIS_FLAVOURED, (c) => BY_FROM.get(c) as string);
}
