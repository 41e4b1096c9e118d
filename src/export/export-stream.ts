import { Readable } from 'node:stream';
import { setImmediate } from 'node:timers/promises';
import type { RowSelection } from '../domain/requests/row-list-query.ts';
import type { Database } from '../store/database.ts';
import type { RowStore } from '../store/rows.ts';
import type { TextEncoder } from './encodings.ts';
import type { RowFormatter } from './formats.ts';
import type { TableDef } from '../domain/table.ts';

/** Rows per chunk: memory holds about one chunk whatever the table size, and other requests run between chunks. */
const EXPORT_CHUNK_ROWS = 1000;

export interface ExportPlan {
  database: Database;
  rows: RowStore;
  table: TableDef;
  selection: RowSelection;
  /** At most this many rows; null: all. */
  limit: number | null;
  formatter: RowFormatter;
  encoder: TextEncoder;
}

type Scan = AsyncGenerator<unknown[][]>;

async function* chunks(plan: ExportPlan, scan: Scan, first: IteratorResult<unknown[][]>): AsyncGenerator<Buffer> {
  const { formatter, encoder } = plan;
  try {
    encoder.write(formatter.header());
    const head = Buffer.concat([encoder.preamble, encoder.take()]);
    if (head.length > 0) yield head;
    for (let next = first; !next.done; next = await scan.next()) {
      for (const raw of next.value) encoder.write(formatter.line(raw));
      // The stream asks for the next chunk only when the client has taken this one: backpressure.
      yield encoder.take();
      // A fast client takes every chunk at once, and promises alone never let the event loop turn:
      // wait for it, so other requests are answered between chunks.
      await setImmediate();
    }
  } finally {
    await scan.return(undefined);
  }
}

/**
 * The export as a byte stream; destroying it (a client gone) stops the reading. Its first rows are
 * read before it is answered: a statement the database refuses (the table's fields changed under
 * the request) fails the request here, to be planned again or answered 409, before any byte is sent.
 */
export async function exportStream(plan: ExportPlan): Promise<Readable> {
  const scan = plan.rows.scan(plan.database, plan.table, {
    filter: plan.selection.filter,
    keys: plan.selection.keys,
    limit: plan.limit,
    chunk: EXPORT_CHUNK_ROWS,
  });
  let first: IteratorResult<unknown[][]>;
  try {
    first = await scan.next();
  } catch (err) {
    await scan.return(undefined);
    throw err;
  }
  return Readable.from(chunks(plan, scan, first), { objectMode: false, highWaterMark: 64 * 1024 });
}
