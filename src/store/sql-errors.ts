/** Turns a database's unique-violation error into a message that names the column, never SQL. */
export function uniqueViolationMessage(err: unknown, label: string): string {
  const e = err as { message?: string; detail?: string };
  // PostgreSQL: detail 'Key (name)=(FOO) already exists.'; SQLite: 'UNIQUE constraint failed: rh_members.email'.
  const pg = /^Key \((.+?)\)=/.exec(e.detail ?? '');
  const lite = /constraint failed: ([\w.]+(?:, [\w.]+)*)/.exec(e.message ?? '');
  const columns = pg ? pg[1].split(', ') : lite ? lite[1].split(', ').map((c) => c.split('.').pop()) : [];
  const what = columns.length > 0 ? `this ${columns.join(' and ')}` : 'the same unique value';
  return `another ${label} already has ${what}`;
}
