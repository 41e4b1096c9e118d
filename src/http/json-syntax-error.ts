import { badRequest, type ServiceError } from '../domain/errors.ts';

/**
 * Where and why a request body is not JSON, as a 400 naming the line and column:
 * `The body is not valid JSON: Expected ',' or '}' after property value at line 3, column 5`.
 * Only a body that failed to parse comes here, so none of this costs a good request anything.
 */

/** The 400 for `text`, which JSON.parse refused with `err`. */
export function notJson(text: string, err: unknown): ServiceError {
  const message = err instanceof Error ? err.message : '';
  // Node 20 names the offset in most messages ("… in JSON at position 25"); the rest are found by scanning.
  const positioned = /^(.*?)(?: in JSON)? at position (\d+)/s.exec(message);
  const token = /^Unexpected token '(.+?)', /s.exec(message);
  const why = positioned ? positioned[1] : token ? `Unexpected token '${token[1]}'` : /end of JSON input/.test(message) ? 'Unexpected end of input' : 'Unexpected character';
  const offset = positioned ? Number(positioned[2]) : jsonErrorOffset(text);
  const { line, column } = lineAndColumn(text, offset < 0 ? text.length : offset);
  return badRequest(`The body is not valid JSON: ${why} at line ${line}, column ${column}`);
}

/** The 1-based line and column (in UTF-16 units) of `offset`; a line ends at \n, \r\n or \r. */
export function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let i = 0; i < offset; i++) {
    const c = text.charCodeAt(i);
    if (c === 10 || (c === 13 && text.charCodeAt(i + 1) !== 10)) {
      line++;
      start = i + 1;
    }
  }
  return { line, column: offset - start + 1 };
}

const SPACE = new Set([' ', '\t', '\n', '\r']);
const ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't']);
const HEX = /^[0-9a-fA-F]$/;
const DIGIT = /^[0-9]$/;

/**
 * The offset of the first character at which `text` stops being JSON (RFC 8259, as JSON.parse
 * reads it); `text.length` when it ends too early; -1 when it is JSON. Iterative, so a deeply
 * nested body cannot overflow the stack.
 */
export function jsonErrorOffset(text: string): number {
  const n = text.length;
  const skip = (i: number) => {
    while (i < n && SPACE.has(text[i])) i++;
    return i;
  };
  /** Where the string starting at `i` (a quote) ends, or -1 - the offset of its fault. */
  const string = (i: number): number => {
    for (let j = i + 1; ; ) {
      if (j >= n) return -1 - n;
      const c = text[j];
      if (c === '"') return j + 1;
      if (c.charCodeAt(0) < 0x20) return -1 - j;
      if (c !== '\\') {
        j++;
        continue;
      }
      if (j + 1 >= n) return -1 - n;
      if (ESCAPES.has(text[j + 1])) {
        j += 2;
        continue;
      }
      if (text[j + 1] !== 'u') return -1 - (j + 1);
      for (let k = j + 2; k < j + 6; k++) if (k >= n || !HEX.test(text[k])) return -1 - Math.min(k, n);
      j += 6;
    }
  };
  const digits = (i: number) => {
    while (i < n && DIGIT.test(text[i])) i++;
    return i;
  };
  /** Where the number starting at `i` ends, or -1 - the offset of its fault. */
  const number = (i: number): number => {
    if (text[i] === '-') i++;
    if (i >= n || !DIGIT.test(text[i])) return -1 - i;
    i = text[i] === '0' ? i + 1 : digits(i);
    if (text[i] === '.') {
      const end = digits(i + 1);
      if (end === i + 1) return -1 - end;
      i = end;
    }
    if (text[i] === 'e' || text[i] === 'E') {
      if (text[i + 1] === '+' || text[i + 1] === '-') i++;
      const end = digits(i + 1);
      if (end === i + 1) return -1 - end;
      i = end;
    }
    return i;
  };
  /** Where the scalar (string, number, true, false, null) at `i` ends, or -1 - the offset of its fault. */
  const scalar = (i: number): number => {
    if (i >= n) return -1 - n;
    const c = text[i];
    if (c === '"') return string(i);
    if (c === '-' || DIGIT.test(c)) return number(i);
    const word = c === 't' ? 'true' : c === 'f' ? 'false' : c === 'n' ? 'null' : '';
    if (word === '') return -1 - i;
    for (let k = 1; k < word.length; k++) if (i + k >= n || text[i + k] !== word[k]) return -1 - Math.min(i + k, n);
    return i + word.length;
  };
  /** After `{` or a comma in an object: a key and its colon; where its value starts, or -1 - the offset of the fault. */
  const key = (i: number): number => {
    i = skip(i);
    if (i >= n) return -1 - n;
    if (text[i] !== '"') return -1 - i;
    i = string(i);
    if (i < 0) return i;
    i = skip(i);
    return text[i] === ':' ? i + 1 : -1 - Math.min(i, n);
  };

  /** The closing brackets awaited, innermost last. */
  const open: string[] = [];
  let i = 0;
  for (;;) {
    // A value starts at i.
    i = skip(i);
    const c = text[i];
    if (c === '{' || c === '[') {
      const close = c === '{' ? '}' : ']';
      const inside = skip(i + 1);
      if (text[inside] === close) {
        i = inside + 1;
      } else {
        open.push(close);
        i = close === '}' ? key(inside) : inside;
        if (i < 0) return -1 - i;
        continue;
      }
    } else {
      i = scalar(i);
      if (i < 0) return -1 - i;
    }
    // After a value: a comma, the innermost closing bracket, or (outside any) the end.
    for (;;) {
      i = skip(i);
      if (open.length === 0) return i === n ? -1 : i;
      const close = open[open.length - 1];
      if (text[i] === close) {
        open.pop();
        i++;
        continue;
      }
      if (text[i] !== ',') return Math.min(i, n);
      i = close === '}' ? key(i + 1) : i + 1;
      if (i < 0) return -1 - i;
      break;
    }
  }
}
