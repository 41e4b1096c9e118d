import type { RecordValueSql } from '../dialect.ts';
import { joinedByOperator } from '../record-json-sql.ts';

/** A non-null column value's JSON text, by the kind of column that holds it (record-json-sql.ts). */
export const postgresRecordValues: RecordValueSql = {
  text: (c) => `to_json(${c})::text`,
  // The shortest decimal that reads back exactly, as JavaScript writes it (-0 is never stored: pg binds it as 0).
  // As to_json writes them (the type's output function; JSON has no NaN or infinity to store), for less.
  real: (c) => `${c}::text`,
  integer: (c) => `${c}::text`,
  boolean: (c) => `${c}::text`,
  // The API's form, as the pg driver's parser makes it (driver.ts): milliseconds and Z.
  timestamp: (c) => `'"' || to_char(${c} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"'`,
  date: (c) => `to_json(${c})::text`,
  time: (c) => `to_json(${c})::text`,
  json: (c) => `${c}::text`,
  joined: joinedByOperator,
};
