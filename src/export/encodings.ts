import iconv from 'iconv-lite';

/** The export text encodings: UTF-8, UTF-8 with a BOM for spreadsheet software, and Shift_JIS. */

export const EXPORT_ENCODINGS = ['utf8', 'utf8Bom', 'shiftJis'] as const;
export type ExportEncoding = (typeof EXPORT_ENCODINGS)[number];

export interface TextEncoder {
  /** The `charset` of the Content-Type. */
  charset: string;
  /** Bytes before the first line. */
  preamble: Buffer;
  /** Whole lines to bytes; never splits a character. */
  encode(text: string): Buffer;
}

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const NON_ASCII = /[^\x00-\x7f]+/g;

/**
 * iconv-lite's Shift_JIS, which writes `?` for every character Shift_JIS cannot represent (emoji,
 * accented letters, …). It maps ASCII to the same bytes, so the ASCII runs that make up most of an
 * export (ids, timestamps, numbers, JSON) are copied natively and only the rest goes through it.
 */
function shiftJis(text: string): Buffer {
  const parts: Buffer[] = [];
  let last = 0;
  for (const m of text.matchAll(NON_ASCII)) {
    if (m.index > last) parts.push(Buffer.from(text.slice(last, m.index), 'latin1'));
    parts.push(iconv.encode(m[0], 'Shift_JIS'));
    last = m.index + m[0].length;
  }
  if (last < text.length) parts.push(Buffer.from(text.slice(last), 'latin1'));
  return Buffer.concat(parts);
}

export function textEncoder(encoding: ExportEncoding): TextEncoder {
  switch (encoding) {
    case 'utf8':
      return { charset: 'utf-8', preamble: Buffer.alloc(0), encode: (text) => Buffer.from(text, 'utf8') };
    case 'utf8Bom':
      return { charset: 'utf-8', preamble: BOM, encode: (text) => Buffer.from(text, 'utf8') };
    case 'shiftJis':
      return { charset: 'shift_jis', preamble: Buffer.alloc(0), encode: shiftJis };
  }
}
