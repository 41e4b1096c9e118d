/**
 * A table with a field of every scalar type (and its options), for the tests that hold an answer to
 * what each type writes and reads back (test/http/rows-crud.test.ts adds a file field to it).
 */
export const EVERY_TYPE_FIELDS = [
  { code: 'title', type: 'text', required: true },
  { code: 'amount', type: 'number' },
  { code: 'done', type: 'boolean' },
  { code: 'at', type: 'dateTime' },
  { code: 'day', type: 'date' },
  { code: 'clock', type: 'time' },
  { code: 'month', type: 'yearMonth' },
  { code: 'color', type: 'select', options: { choices: ['red', 'green', 'blue'] } },
  { code: 'meta', type: 'record' },
  { code: 'tags', type: 'list' },
];
