/** Reading a driver's error (better-sqlite3's, pg's), for the dialects' is* predicates. */

export const messageOf = (err: unknown) => String((err as { message?: unknown })?.message ?? '');
/** A user table's or field's physical name: only those change under a running request. */
export const USER_TABLE_NAME = /\b(rows|f)_[0-9a-f]{32}\b/;

export function errCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : undefined;
}
