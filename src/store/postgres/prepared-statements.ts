import type { PostgresPool, PostgresPoolClient } from 'kysely';
import type pg from 'pg';
import type { PreparedStatementsMode } from '../../config.ts';
import { behindPooler } from './pooler.ts';

/**
 * PostgreSQL: the statements marked here run as named prepared statements, parsed and planned
 * once per connection instead of on every run. For the single-row statements every request
 * makes, whose parsing and planning cost more than their work: a create with its change entry
 * (one statement of three writes) ran at 3,500 a second unprepared and 8,200 prepared on one
 * connection. Reads with filters are not marked: a generic plan could suit one filter value and
 * not another.
 *
 * A statement stays prepared on each connection until the connection ends; the pool ends
 * connections after a while (database.ts), so statements of table versions gone do not pile up.
 *
 * Behind a pooler in transaction mode (PgBouncer before 1.21, or without max_prepared_statements)
 * a statement prepared in one transaction is unknown to the backend that serves the next, or
 * already known to it under another client's name: `auto` (the default) gives names only on a
 * connection straight to PostgreSQL (pooler.ts), `on` on every one, `off` on none.
 */
export class PreparedStatements {
  private readonly names = new Map<string, string>();
  private made = 0;

  /** At most `limit` statements are marked at once; marking one more forgets the oldest. */
  constructor(
    private readonly mode: PreparedStatementsMode = 'auto',
    private readonly limit = 1000,
  ) {}

  /** Whether marked statements run by name on this new connection. */
  private async named(client: pg.PoolClient): Promise<boolean> {
    if (this.mode !== 'auto') return this.mode === 'on';
    return !(await behindPooler(client));
  }

  /** From now on `text` runs prepared. */
  mark(text: string): void {
    if (this.names.has(text)) return;
    if (this.names.size >= this.limit) this.names.delete(this.names.keys().next().value as string);
    this.names.set(text, `rh_${++this.made}`);
  }

  /** The pool as the query builder sees it: its clients run marked statements by name. */
  pool(pool: pg.Pool): PostgresPool {
    const names = this.names;
    // One wrapper per connection, for as long as it lives: the query builder knows a connection by it.
    const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>();
    const wrap = (client: pg.PoolClient, named: boolean) =>
      ({
        query(text: unknown, values?: readonly unknown[]) {
          const name = named && typeof text === 'string' ? names.get(text) : undefined;
          if (name !== undefined) return client.query({ name, text: text as string, values: values as unknown[] });
          return client.query(text as string, values as unknown[]);
        },
        release: () => client.release(),
      }) as unknown as PostgresPoolClient;
    return {
      connect: async () => {
        const client = await pool.connect();
        let wrapper = wrappers.get(client);
        if (!wrapper) {
          let named: boolean;
          try {
            named = await this.named(client);
          } catch (err) {
            // A connection that cannot answer is not given back for another to use.
            client.release(err as Error);
            throw err;
          }
          wrapper = wrap(client, named);
          wrappers.set(client, wrapper);
        }
        return wrapper;
      },
      end: () => pool.end(),
    };
  }
}
