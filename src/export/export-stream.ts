import { Readable } from 'node:stream';
import { setImmediate } from 'node:timers/promises';
import type { RowSelection } from '../domain/row-list-query.ts';
import type { Database } from '../store/database.ts';
import type { RowStore } from '../store/rows.ts';
import type { TableDef } from '../store/table-catalog.ts';
import type { TextEncoder } from './encodings.ts';
import type { RowFormatter } from './formats.ts';

/** Rows per chunk: memory holds about one chunk whatever the table size, and other requests run between chunks. */
const EXPORT_CHUNK_ROWS = 500;

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

async function* chunks(plan: ExportPlan): AsyncGenerator<Buffer> {
  const { formatter, encoder } = plan;
  const head = Buffer.concat([encoder.preamble, encoder.encode(formatter.header())]);
  if (head.length > 0) yield head;
  const scan = plan.rows.scan(plan.database, plan.table, {
    filter: plan.selection.filter,
    keys: plan.selection.keys,
    limit: plan.limit,
    chunk: EXPORT_CHUNK_ROWS,
  });
  for await (const rows of scan) {
    let text = '';
    for (const raw of rows) text += formatter.line(raw);
    // The stream asks for the next chunk only when the client has taken this one: backpressure.
    yield encoder.encode(text);
    // A fast client takes every chunk at once, and promises alone never let the event loop turn:
    // wait for it, so other requests are answered between chunks.
    await setImmediate();
  }
}

/** The export as a byte stream; destroying it (a client gone) stops the reading. */
export function exportStream(plan: ExportPlan): Readable {
  return Readable.from(chunks(plan), { objectMode: false, highWaterMark: 64 * 1024 });
}
