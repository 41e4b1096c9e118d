import iconv from 'iconv-lite';
import type { TextEncoding } from '../domain/file-formats.ts';
import { toCp932Spelling } from './cp932.ts';

/** The export text encodings: UTF-8, UTF-8 with a BOM for spreadsheet software, and Shift_JIS as Windows-31J (CP932). */

export interface TextEncoder {
  /** The `charset` of the Content-Type. */
  charset: string;
  /** Bytes before the first line. */
  preamble: Buffer;
  /** Adds one whole line (a character is never split between two takes). */
  write(line: string): void;
  /** The bytes of the lines written since the last take, in a buffer of their own. */
  take(): Buffer;
}

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const NON_ASCII = /[^\x00-\x7f]+/g;

/**
 * Windows-31J (CP932), what Excel reads as Shift_JIS: iconv-lite's `cp932` codec, after the
 * JIS-flavoured code points CP932 spells differently (〜 U+301C, − U+2212, …) have been replaced by
 * CP932's own (cp932.ts). It writes `?` for every character CP932 cannot represent (emoji, accented
 * letters, …). It maps ASCII to the same bytes, so the ASCII runs that make up most of an export
 * (ids, timestamps, numbers, JSON) are copied natively and only the rest goes through it.
 */
function windows31j(text: string): Buffer {
  const parts: Buffer[] = [];
  let last = 0;
  for (const m of text.matchAll(NON_ASCII)) {
    if (m.index > last) parts.push(Buffer.from(text.slice(last, m.index), 'latin1'));
    parts.push(iconv.encode(toCp932Spelling(m[0]), 'cp932'));
    last = m.index + m[0].length;
  }
  if (last < text.length) parts.push(Buffer.from(text.slice(last), 'latin1'));
  return Buffer.concat(parts);
}

/**
 * UTF-8, each line written into a scratch buffer as it comes (grown when a line might not fit),
 * and the lot copied out: Buffer.from of the lines' concatenation spent most of its time joining them.
 */
function utf8(preamble: Buffer): TextEncoder {
  let scratch = Buffer.allocUnsafe(256 * 1024);
  let at = 0;
  return {
    charset: 'utf-8',
    preamble,
    write(line) {
      const room = line.length * 3; // UTF-8 takes at most 3 bytes per UTF-16 unit
      if (scratch.length - at < room) {
        const bigger = Buffer.allocUnsafe(Math.max(2 * scratch.length, at + room));
        scratch.copy(bigger, 0, 0, at);
        scratch = bigger;
      }
      at += scratch.write(line, at, 'utf8');
    },
    take() {
      const bytes = Buffer.from(scratch.subarray(0, at));
      at = 0;
      return bytes;
    },
  };
}

function shiftJis(): TextEncoder {
  let text = '';
  return {
    charset: 'shift_jis',
    preamble: Buffer.alloc(0),
    write(line) {
      text += line;
    },
    take() {
      const bytes = windows31j(text);
      text = '';
      return bytes;
    },
  };
}

/** An encoder for one export: it holds the lines written until they are taken. */
export function textEncoder(encoding: TextEncoding): TextEncoder {
  switch (encoding) {
    case 'utf8':
      return utf8(Buffer.alloc(0));
    case 'utf8Bom':
      return utf8(BOM);
    case 'shiftJis':
      return shiftJis();
  }
}
