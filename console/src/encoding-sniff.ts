/** Pure (no DOM), so the suite's Node tests can import it. */

/** The encoding an import file seems to be in, from its first bytes: a UTF-8 BOM; else UTF-8 if it decodes as such; else Shift_JIS. */
export function sniffEncoding(head: Uint8Array): { encoding: 'utf8' | 'utf8Bom' | 'shiftJis'; note: string } {
  if (head.length >= 3 && head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf) return { encoding: 'utf8Bom', note: 'A UTF-8 byte order mark was found: UTF-8.' };
  try {
    // A cut in the middle of a character at the end of the sample is not a reason to doubt UTF-8.
    new TextDecoder('utf-8', { fatal: true }).decode(head.subarray(0, lastWhole(head)));
    return { encoding: 'utf8', note: 'The file reads as UTF-8.' };
  } catch {
    return { encoding: 'shiftJis', note: 'The file is not UTF-8: Shift_JIS assumed.' };
  }
}

function lastWhole(b: Uint8Array): number {
  for (let i = b.length - 1; i >= 0 && i >= b.length - 4; i--) {
    if ((b[i] & 0xc0) === 0xc0) return i; // a lead byte near the end: stop before it
    if ((b[i] & 0x80) === 0) break;
  }
  return b.length;
}
