/** The shapes of user-given names: table codes, field codes, row ids (CONTRACT §4-5). */

export const TABLE_CODE = '^[A-Za-z][A-Za-z0-9_-]{0,63}$';
export const FIELD_CODE = '^[A-Za-z][A-Za-z0-9_]{0,63}$';
export const RESERVED_FIELD_CODES = ['id', 'createdAt', 'updatedAt', 'createdBy', 'updatedBy'];

/** A client row id: 1–128 of [A-Za-z0-9_.:@-], starting with a letter or digit. Generated ids (UUIDs) fit too. */
export const ROW_ID = /^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$/;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TABLE_CODE_RE = new RegExp(TABLE_CODE);

/** A table reference of UUID shape is an id; anything else is a code (codes may never look like UUIDs). */
export const isUuid = (s: string): boolean => UUID.test(s);

/** Whether a reference could name a table at all: what cannot is never sent to the database. */
export const isTableRef = (s: string): boolean => isUuid(s) || TABLE_CODE_RE.test(s);
