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
};
