import { Readable } from 'node:stream';
import { setImmediate } from 'node:timers/promises';
import type { ExportPlan } from '../plan/export-plan.ts';
import type { Database } from '../store/database.ts';
import type { RowStore } from '../store/rows.ts';
import { type TextEncoder, textEncoder } from './encodings.ts';
import { type RowFormatter, rowFormatter } from './formats.ts';
import type { TableCatalog } from '../store/table-catalog.ts';
import type { RawRow } from '../domain/row.ts';
import { decodeLink, linkIds } from '../domain/field-types/link.ts';
import { expandLinks } from '../store/links/expand.ts';

/** What an export reads with. */
export interface ExportStore {
  database: Database;
  rows: RowStore;
  /** Finds the tables expanded links point at. */
  catalog: TableCatalog;
}

/** An export under way: its bytes, and the charset they are in. */
export interface ExportFile {
  stream: Readable;
  charset: string;
}

type Scan = AsyncGenerator<unknown[][]>;

/** How a chunk's lines carry their expanded links (`expand`, jsonl): their linked rows read once per chunk. */
type Expander = (rows: unknown[][]) => Promise<((fieldId: string, value: unknown) => unknown) | undefined>;

function expander(store: ExportStore, plan: ExportPlan): Expander {
  const { dialect } = store.database;
  const columns = plan.table.compiled.columns;
  return async (rows) => {
    if (plan.expand.length === 0) return undefined;
    const raws = rows.map((row) => Object.fromEntries(columns.map((c, i) => [c, row[i]])) as RawRow);
    const expanded = await expandLinks(store.database, store.catalog, raws.map((row) => ({ table: plan.table, row })), plan.expand);
    return (fieldId, value) => {
      const x = expanded.get(fieldId);
      if (x === undefined) return undefined;
      const records = linkIds(decodeLink(value, dialect)).flatMap((id) => {
        const row = x.rows.get(id);
        return row === undefined ? [] : [typeof row === 'string' ? JSON.parse(row) : store.rows.toRecord(x.table, row)];
      });
      return x.multiple ? records : (records[0] ?? null);
    };
  };
}

async function* chunks(formatter: RowFormatter, encoder: TextEncoder, scan: Scan, first: IteratorResult<unknown[][]>, expand: Expander): AsyncGenerator<Buffer> {
  try {
    encoder.write(formatter.header());
    const head = Buffer.concat([encoder.preamble, encoder.take()]);
    if (head.length > 0) yield head;
    for (let next = first; !next.done; next = await scan.next()) {
      const expanded = await expand(next.value);
      for (const raw of next.value) encoder.write(formatter.line(raw, expanded));
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
  return { stream: Readable.from(chunks(formatter, encoder, scan, first, expander(store, plan)), { objectMode: false, highWaterMark: 64 * 1024 }), charset: encoder.charset };
}
