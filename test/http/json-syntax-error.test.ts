import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import { jsonErrorOffset, lineAndColumn, notJson } from '../../src/http/json-syntax-error.ts';

/**
 * Where a body stops being JSON (json-syntax-error.ts) against JSON.parse itself: the same verdict
 * on every text, and the same offset wherever Node's message names one.
 */

/** JSON.parse's verdict: -1 when it parses, else the offset its message names, or the unexpected token it names. */
function v8Offset(text: string): number | string {
  try {
    JSON.parse(text);
    return -1;
  } catch (err) {
    const message = (err as Error).message;
    const at = / at position (\d+)/.exec(message);
    if (at) return Number(at[1]);
    if (/end of JSON input/.test(message)) return text.length;
    return (/^Unexpected token '(.+?)', /s.exec(message) ?? assert.fail(message))[1];
  }
}

const PIECES = ['{', '}', '[', ']', ',', ':', '"', '"a"', '\\', '\\u', '00e9', 'g', '1', '0', '-', '.', 'e', '+', 'true', 'tru', 'null', 'nul', 'false', ' ', '\n', '\r\n', '\t', 'x', '\u0001', '😀', '""', '{"k":', '[1,'];

it('finds the first offset at which a text stops being JSON, as JSON.parse does', () => {
  fc.assert(
    fc.property(fc.array(fc.constantFrom(...PIECES), { maxLength: 14 }), (pieces) => {
      const text = pieces.join('');
      const expected = v8Offset(text);
      const found = jsonErrorOffset(text);
      if (typeof expected === 'number') assert.equal(found, expected, JSON.stringify(text));
      else assert.ok(found >= 0 && text.startsWith(expected, found), `${JSON.stringify(text)}: ${found}, not at ${expected}`);
    }),
    { numRuns: 20_000 },
  );
  // Valid JSON of every shape stays valid.
  fc.assert(fc.property(fc.json(), (text) => assert.equal(jsonErrorOffset(text), -1, text)), { numRuns: 2_000 });
});

it('scans deep nesting without recursion', () => {
  assert.equal(jsonErrorOffset('['.repeat(200_000) + ']'.repeat(200_000)), -1);
  assert.equal(jsonErrorOffset('['.repeat(200_000)), 200_000);
});

it('counts lines at \\n, \\r\\n and \\r, and columns from 1', () => {
  assert.deepEqual(lineAndColumn('abc', 0), { line: 1, column: 1 });
  assert.deepEqual(lineAndColumn('a\nbc', 3), { line: 2, column: 2 });
  assert.deepEqual(lineAndColumn('a\r\nbc', 4), { line: 2, column: 2 });
  assert.deepEqual(lineAndColumn('a\rb\nc', 4), { line: 3, column: 1 });
});

it('names the fault, its line and column, in Node\'s words without the offset', () => {
  const message = (text: string) => {
    try {
      JSON.parse(text);
    } catch (err) {
      return notJson(text, err).message;
    }
    return assert.fail('parsed');
  };
  assert.equal(message('{\n  "a": 1,\n  "b": 2\n    "c": 3}'), "The body is not valid JSON: Expected ',' or '}' after property value at line 4, column 5");
  assert.equal(message('{"a": tru}'), "The body is not valid JSON: Unexpected token '}' at line 1, column 10");
  assert.equal(message('{"name": '), 'The body is not valid JSON: Unexpected end of input at line 1, column 10');
  assert.equal(message('[1]\n]'), 'The body is not valid JSON: Unexpected non-whitespace character after JSON at line 2, column 1');
});
