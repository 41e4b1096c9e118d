import type { FileLinks } from '../domain/file-value.ts';
import type { Dialect } from '../store/dialect.ts';
import type { TableDef } from '../domain/table.ts';
import type { RawRow } from '../domain/row.ts';
import { systemJson } from '../domain/record-system-json.ts';
import { holdsJsonText, rowRecord } from '../domain/row-record.ts';
import { decodeLink, isLinkField, linkIds } from '../domain/field-types/link.ts';
import type { Expanded, Expansion } from '../store/links/expand.ts';
import type { Utf8Out } from './utf8-out.ts';

/**
 * Row records (the seed spec's single-row shape) written as JSON text straight from the columns
 * the database returned: the same text as JSON.stringify(RowStore.toRecord(row)), without building
 * the record first, and without parsing JSON columns only to write them out again (a list page of
 * the benchmark table holds 100 such values).
 */

/** What Fastify answers objects with: rendered JSON text goes out the same. */
export const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * One record's JSON text. Timestamps are the service's own ISO strings: they need no escaping.
 * `links` signs the download URLs of file values (Files.links); a table with file fields needs it.
 */
export function recordJson(table: TableDef, raw: RawRow, dialect: Dialect, links?: FileLinks, expanded?: Expanded): string {
  return recordText(table, raw, dialect, links, expanded);
}

/**
 * recordJson, or with `out` the record written to it: all but the text returned (the record's end,
 * for the caller to write). There each expanded value's records (the linked rows' texts, a
 * customer's 700-byte array of order ids) are written as they are rather than concatenated into
 * the record: a record holding a character past Latin-1 (the benchmark's 請求書) is flattened into
 * a two-byte string, which copied each linked record's one-byte text to twice its size before
 * encoding it (decisions.md, "Sixth round").
 */
function recordText(table: TableDef, raw: RawRow, dialect: Dialect, links: FileLinks | undefined, expanded: Expanded | undefined, out?: Utf8Out): string {
  let values = '';
  // Whether the record's beginning is written to `out` already (before an expanded value's records).
  let written = false;
  // Each field's key (`"code":`, escaped once), column and type: made with the table version (CompiledTable).
  for (const { key, column, type, nullJson, field } of table.compiled.fields) {
    const v = raw[column];
    let text: string;
    // Only a link field is expanded: the other fields' values look nothing up.
    const expansion = expanded === undefined || !isLinkField(field) ? undefined : expanded.get(field.id);
    if (expansion !== undefined) {
      if (out !== undefined) {
        const name = values === '' && !written ? key : `,${key}`;
        out.text(written ? values + name : recordHead(raw) + values + name);
        writeExpanded(out, v, expansion, dialect);
        values = '';
        written = true;
        continue;
      }
      text = expansion.multiple ? `[${expandedRecords(v, expansion, dialect).join(',')}]` : singleExpanded(v, expansion, dialect);
    } else if (v === null || v === undefined) text = nullJson;
    else if (type.withLinks && links) text = JSON.stringify(type.withLinks(type.fromDb(v, dialect), (file) => links(file, table.id, raw.id)));
    else text = type.jsonFromDb ? type.jsonFromDb(v, dialect) : JSON.stringify(type.fromDb(v, dialect));
    values += values === '' && !written ? key + text : `,${key}${text}`;
  }
  return written ? `${values}}}` : `${recordHead(raw)}${values}}}`;
}

/** A record's text up to its first value: its id and system fields. */
function recordHead(raw: RawRow): string {
  return `{"id":${JSON.stringify(raw.id)}${systemJson(raw.created_at, raw.updated_at, raw.created_by, raw.updated_by)}`;
}

/**
 * The record texts change entries were rendered with (ChangeLog's render, entryRecordJson), by
 * row: the answer to a single-row write renders the same text (no file links, no expansion), and
 * takes it from here rather than render the row a second time. Kept as long as the row object is.
 */
const entryRecords = new WeakMap<RawRow, string>();

/** A change entry's record (recordJson without file links), kept for the answer to the same write. */
export function entryRecordJson(table: TableDef, raw: RawRow, dialect: Dialect): string {
  const text = recordJson(table, raw, dialect);
  entryRecords.set(raw, text);
  return text;
}

/** recordJson of a written row: the text its change entry was rendered with, where the answer is that text. */
export function writtenRecordJson(table: TableDef, raw: RawRow, dialect: Dialect, links?: FileLinks, expanded?: Expanded): string {
  const kept = links === undefined && expanded === undefined ? entryRecords.get(raw) : undefined;
  return kept ?? recordJson(table, raw, dialect, links, expanded);
}

/** The records of an expanded link's value (CONTRACT §11), in link order: the linked rows' texts, their own links as ids (a row not read, gone: none). */
function expandedRecords(value: unknown, expansion: Expansion, dialect: Dialect): string[] {
  const records: string[] = [];
  for (const id of linkIds(decodeLink(value, dialect))) {
    const text = expandedRecord(expansion, id, dialect);
    if (text !== undefined) records.push(text);
  }
  return records;
}

/** A single link's expanded value: its one id's record, or null (no list made for it). */
function singleExpanded(value: unknown, expansion: Expansion, dialect: Dialect): string {
  return expandedRecord(expansion, decodeLink(value, dialect) as string | null, dialect) ?? 'null';
}

/** An expanded value written to `out`: a multiple link's records as an array, a single link's one or null. */
function writeExpanded(out: Utf8Out, value: unknown, expansion: Expansion, dialect: Dialect): void {
  if (!expansion.multiple) {
    out.text(singleExpanded(value, expansion, dialect));
    return;
  }
  const records = expandedRecords(value, expansion, dialect);
  out.text('[');
  for (let i = 0; i < records.length; i++) {
    if (i > 0) out.text(',');
    out.text(records[i]);
  }
  out.text(']');
}

/**
 * The record text of the expanded row `id` (undefined: not among the rows read), rendered once per
 * answer however many of its rows link to it (a page of one customer's orders): its columns are
 * replaced by its text in the expansion itself. Kept in a WeakMap by expansion instead, every
 * answer's linked records survived the next scavenge (a WeakMap's table is old, its young entries
 * kept as if held): about 2.7 MB copied by each scavenge of a loop of expanded pages, against 7 KB
 * (decisions.md, "Seventh round").
 */
function expandedRecord(expansion: Expansion, id: string | null, dialect: Dialect): string | undefined {
  if (id === null) return undefined;
  const row = expansion.rows.get(id);
  if (row === undefined || typeof row === 'string') return row;
  const text = recordJson(expansion.table, row, dialect);
  expansion.rows.set(id, text);
  return text;
}

/** Records as a JSON array's text, written to `out`. */
export function writeRecords(out: Utf8Out, table: TableDef, rows: readonly RawRow[], dialect: Dialect, links?: FileLinks, expanded?: Expanded): void {
  // Where no column holds JSON text to be written as it is (PostgreSQL's jsonb arrives decoded),
  // the records as values written by one JSON.stringify, the same text: a 51-row page of the
  // benchmark table took about a quarter less CPU than rendering each value's text (issue 27).
  if (links === undefined && expanded === undefined && !rows.some((row) => holdsJsonText(table, row))) {
    out.text(JSON.stringify(rows.map((row) => rowRecord(table, row, dialect))));
    return;
  }
  writeArray(out, rows, (row) => recordText(table, row, dialect, links, expanded, out));
}

/** Written records as a JSON array's text (the bulk writes' answers), each as its change entry was rendered where that is the answer, written to `out`. */
export function writeWrittenRecords(out: Utf8Out, table: TableDef, rows: readonly RawRow[], dialect: Dialect, links?: FileLinks, expanded?: Expanded): void {
  writeArray(out, rows, (row) => (expanded === undefined ? writtenRecordJson(table, row, dialect, links) : recordText(table, row, dialect, links, expanded, out)));
}

/** A JSON array of the rows' texts, written to `out` piece by piece; `text` may write a row's beginning itself, and returns the rest. */
function writeArray(out: Utf8Out, rows: readonly RawRow[], text: (row: RawRow) => string): void {
  out.text('[');
  for (let i = 0; i < rows.length; i++) {
    if (i > 0) out.text(',');
    out.text(text(rows[i]));
  }
  out.text(']');
}

/** A batch's answer: `{data: [{type, row}]}`, each row of its own table (null after a delete). */
export function batchJson(results: readonly { type: string; table: TableDef; row: RawRow | null }[], dialect: Dialect, links?: FileLinks, expanded?: Expanded): string {
  let out = '{"data":[';
  results.forEach(({ type, table, row }, i) => {
    out += `${i === 0 ? '' : ','}{"type":${JSON.stringify(type)},"row":${row === null ? 'null' : writtenRecordJson(table, row, dialect, links, expanded)}}`;
  });
  return `${out}]}`;
}
