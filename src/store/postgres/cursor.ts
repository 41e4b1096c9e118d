import { CompiledQuery } from 'kysely';
import type pg from 'pg';
import type { Db, RowScan } from '../dialect.ts';

/** Every session speaks UTC, the pool's and the cursors' alike: driver.ts's utcTimestamp reads timestamps so. */
const UTC = "time zone 'UTC'";
export const IN_UTC = `set ${UTC}`;

/** Whether the plan of `query` sorts rows (a full or an incremental sort): no index gives its order. */
async function sortsRows(db: Db, query: { sql: string; parameters: readonly unknown[] }): Promise<boolean> {
  const { rows } = await db.executeQuery(CompiledQuery.raw(`explain (format json) ${query.sql}`, [...query.parameters]));
  return /"Node Type":\s*"(Incremental )?Sort"/.test(JSON.stringify(rows));
}

/** PostgreSQL's exports: keyset pages where an index gives the order, else one cursor. */
export class PostgresReads {
  private readonly cursors = new Set<pg.Client>();

  constructor(
    private readonly driver: typeof pg,
    private readonly url: string,
    private readonly db: Db,
  ) {}

  /**
   * A query's rows as arrays, `size` at a time, read through a cursor in one read-only transaction
   * on a connection of its own (never one of the pool's, which requests need): one snapshot, and
   * one sort where its order needs one. Ends the transaction and the connection when the reading
   * ends or stops (return()).
   */
  async *cursor(query: { sql: string; parameters: readonly unknown[] }, size: number): AsyncGenerator<unknown[][]> {
    const client = new this.driver.Client({ connectionString: this.url });
    // A server gone mid-read fails the read, never the process.
    client.on('error', () => {});
    this.cursors.add(client);
    try {
      await client.connect();
      // One round trip; the setting, LOCAL, ends with the transaction (a pooler's next client never sees it).
      await client.query(`begin read only; set local ${UTC}`);
      await client.query(`declare rh_rows no scroll cursor for ${query.sql}`, [...query.parameters]);
      for (;;) {
        const { rows } = await client.query<unknown[]>({ text: `fetch forward ${size} from rh_rows`, rowMode: 'array' });
        if (rows.length > 0) yield rows;
        if (rows.length < size) return;
      }
    } finally {
      this.cursors.delete(client);
      // The transaction ends with the connection.
      await client.end().catch(() => {});
    }
  }

  /**
   * Where the order needs a sort, each keyset page would sort what is left of the table: the
   * rows are read through one cursor instead, sorted once.
   */
  async *scan(scan: RowScan): AsyncGenerator<unknown[][]> {
    const first = Math.min(scan.chunk, scan.limit ?? Number.POSITIVE_INFINITY);
    if (await sortsRows(this.db, scan.query(first))) {
      yield* this.cursor(scan.query(scan.limit), scan.chunk);
      return;
    }
    yield* scan.pages();
  }

  async close(): Promise<void> {
    await Promise.all([...this.cursors].map((c) => c.end().catch(() => {})));
  }
}
