import type { CachedStatement } from './statement-cache.ts';

/**
 * Runs one statement once for each row of arguments, synchronously, on the main connection: inside
 * the caller's transaction, a bulk insert without a trip through the query builder for every row.
 * An error carries the index of the row that failed (`rowIndex`). Answers the rowids of the first
 * and the last row inserted, for an INSERT.
 */
export function runEach(main: { prepare(source: string): CachedStatement }, source: string, rows: readonly (readonly unknown[])[]): { first: number; last: number } {
  const statement = main.prepare(source);
  let first = 0;
  let last = 0;
  rows.forEach((row, rowIndex) => {
    try {
      last = Number(statement.run(row).lastInsertRowid);
    } catch (err) {
      throw Object.assign(err as Error, { rowIndex });
    }
    if (rowIndex === 0) first = last;
  });
  return { first, last };
}
