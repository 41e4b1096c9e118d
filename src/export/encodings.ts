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

export function textEncoder(encoding: ExportEncoding): TextEncoder {
  switch (encoding) {
    case 'utf8':
      return { charset: 'utf-8', preamble: Buffer.alloc(0), encode: (text) => Buffer.from(text, 'utf8') };
    case 'utf8Bom':
      return { charset: 'utf-8', preamble: BOM, encode: (text) => Buffer.from(text, 'utf8') };
    case 'shiftJis':
      // iconv-lite writes `?` for every character Shift_JIS cannot represent (emoji, accented letters, …).
      return { charset: 'shift_jis', preamble: Buffer.alloc(0), encode: (text) => iconv.encode(text, 'Shift_JIS') };
  }
}
