import type pg from 'pg';

/**
 * Whether a connection goes through a connection pooler (PgBouncer, …) rather than straight to
 * PostgreSQL. PostgreSQL keys each connection (BackendKeyData, what a cancel request names) by
 * the process id of the backend serving it; a pooler hands out keys of its own, since the backend
 * behind a client changes. In PgBouncer's transaction mode each transaction may run on another
 * backend: named prepared statements and LISTEN break there (docs/decisions.md, PgBouncer).
 */
export async function behindPooler(client: pg.ClientBase): Promise<boolean> {
  const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
  // pg keeps the key's process id on the client (not in its types).
  return rows[0]?.pid !== (client as unknown as { processID: number | null }).processID;
}
