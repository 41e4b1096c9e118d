import { Readable } from 'node:stream';
import { setImmediate } from 'node:timers/promises';
import type { ExportPlan } from '../plan/export-plan.ts';
import type { Database } from '../store/database.ts';
import type { RowStore } from '../store/rows.ts';
import { type TextEncoder, textEncoder } from './encodings.ts';
import { type RowFormatter, rowFormatter } from './formats.ts';

/** What an export reads with. */
export interface ExportStore {
  database: Database;
  rows: RowStore;
}

/** An export under way: its bytes, and the charset they are in. */
export interface ExportFile {
  stream: Readable;
  charset: string;
}

type Scan = AsyncGenerator<unknown[][]>;

async function* chunks(formatter: RowFormatter, encoder: TextEncoder, scan: Scan, first: IteratorResult<unknown[][]>): AsyncGenerator<Buffer> {
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
export async function exportStream(store: ExportStore, plan: ExportPlan): Promise<ExportFile> {
  const scan = store.rows.scan(store.database, plan.table, {
    filter: plan.selection.filter,
    keys: plan.selection.keys,
    limit: plan.limit,
    chunk: plan.chunk,
  });
  let first: IteratorResult<unknown[][]>;
  try {
    first = await scan.next();
  } catch (err) {
    await scan.return(undefined);
    throw err;
  }
  const formatter = rowFormatter(plan.format, plan.table.fields, plan.newline, plan.header, store.database.dialect);
  const encoder = textEncoder(plan.encoding);
  return { stream: Readable.from(chunks(formatter, encoder, scan, first), { objectMode: false, highWaterMark: 64 * 1024 }), charset: encoder.charset };
}
