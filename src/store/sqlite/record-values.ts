import type { RecordValueSql } from '../dialect.ts';

/** A non-null column value's JSON text, by the kind of column that holds it (record-json-sql.ts). */
export const sqliteRecordValues: RecordValueSql = {
  // json_quote writes a real with as many digits as read it back exactly (2 as 2.0).
  text: (c) => `json_quote(${c})`,
  real: (c) => `json_quote(${c})`,
  integer: (c) => `json_quote(${c})`,
  boolean: (c) => `case ${c} when 1 then 'true' when 0 then 'false' end`,
  // Dates and times are kept as the API writes them.
  timestamp: (c) => `json_quote(${c})`,
  date: (c) => `json_quote(${c})`,
  time: (c) => `json_quote(${c})`,
  // The JSON text as the service wrote it.
  json: (c) => c,
  joined: joinedByCall,
};

/** The most arguments SQLite's functions take (SQLITE_MAX_FUNCTION_ARG as built: 1,000), less one. */
const MOST_ARGUMENTS = 999;

/**
 * Parts joined by concat() (SQLite 3.44 and later), several hundred at most to a call: one text made
 * of them at once, where a || makes a new text of its two sides for each part (the parts of an
 * expanded customer's record: 16 texts made, its 700-byte list of ids copied 4 times; by
 * instruction counts, 13% of the statement reading 50 such records, decisions.md "Seventh round").
 * concat() skips a null where || answers null: no part here is null.
 */
function joinedByCall(parts: readonly string[]): string {
  if (parts.length <= MOST_ARGUMENTS) return `concat(${parts.join(', ')})`;
  const groups: string[] = [];
  for (let i = 0; i < parts.length; i += MOST_ARGUMENTS) groups.push(joinedByCall(parts.slice(i, i + MOST_ARGUMENTS)));
  return joinedByCall(groups);
}
