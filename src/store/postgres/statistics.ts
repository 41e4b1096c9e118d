import { type QueryExecutorProvider, sql } from 'kysely';
import { Keeper, type PlannerStatistics } from '../statistics.ts';

/**
 * PostgreSQL's statistics: autovacuum analyses a table only after a delay, so a table just loaded
 * is analysed at once. ANALYZE samples a bounded number of rows and takes no lock that reads or
 * writes wait for. PostgreSQL keeps its statistics across restarts, so there is nothing to check on start.
 */
export function postgresStatistics(db: QueryExecutorProvider, onError: (err: unknown) => void): PlannerStatistics {
  const keeper = new Keeper(async (tables) => {
    const counts = new Map<string, number>();
    for (const table of tables ?? []) {
      try {
        await sql`analyze ${sql.table(table)}`.execute(db);
      } catch (err) {
        if ((err as { code?: string }).code !== '42P01') throw err; // dropped meanwhile: nothing to do
        continue;
      }
      const row = await sql<{ rows: number }>`select reltuples::float8 as rows from pg_class where oid = ${table}::regclass`.execute(db);
      counts.set(table, Math.max(0, Number(row.rows[0]?.rows ?? 0)));
    }
    return counts;
  }, onError);
  return { noteWrites: (p, n) => keeper.noteWrites(p, n), settled: () => keeper.settled(), close: () => keeper.close() };
}
