import type { FieldDef } from '../../domain/field-types/field-type.ts';
import { decodeLink, isLinkField, linkIds, linkOptions } from '../../domain/field-types/link.ts';
import { fieldColumn } from '../../domain/row-columns.ts';
import type { RawRow } from '../../domain/row.ts';
import type { TableDef } from '../../domain/table.ts';
import { sql } from 'kysely';
import { type Database, readRows } from '../database.ts';
import type { TableCatalog } from '../table-catalog.ts';
import { listParams, listStatement } from './list-statements.ts';
import { exactRecordJsonSql } from '../record-json-sql.ts';

/**
 * The rows an `expand`ed link field names, read once for a whole answer: its target table and those
 * rows by id, each as its columns, or as its record's JSON text where the database rendered it
 * (recordsInSql). The renderer replaces a row's columns by its text once it has rendered it
 * (render/row-json.ts, expandedRecord): each linked row is rendered once per answer.
 */
export interface Expansion {
  table: TableDef;
  /** Whether the field is a multiple link (its value an array of ids), else one id or none. */
  multiple: boolean;
  rows: Map<string, RawRow | string>;
}

/**
 * Whether a table's expanded rows are read as their records' text, rendered by the database
 * (record-json-sql.ts): where it writes each of their values as the renderer would, byte for byte
 * (LinkSql.recordValueExact). Each row then crosses from the database as one value rather than
 * one per column, and is not rendered again: on SQLite, where reading a value costs about as much
 * as rendering it, that is most of what an expanded row costs; on PostgreSQL the driver parses one
 * value a row instead of each column's (decisions.md, "Sixth round").
 */
function recordsInSql(database: Database, table: TableDef): boolean {
  const { links } = database.dialect;
  return table.compiled.fields.every((f) => links.recordValueExact(f.type));
}

/** Per expanded field id. */
export type Expanded = ReadonlyMap<string, Expansion>;

/** Ids read per statement. */
const PER_READ = 1000;

/**
 * Reads the rows the `fields` link to from the given rows (each of its own table), in one
 * statement per field and 1,000 ids, the ids bound as one list (list-statements.ts). A field of a
 * table none of the rows is of reads nothing.
 */
export async function expandLinks(database: Database, catalog: TableCatalog, rows: readonly { table: TableDef; row: RawRow | null }[], fields: readonly FieldDef[]): Promise<Expanded> {
  const { db, dialect } = database;
  const out = new Map<string, Expansion>();
  for (const field of fields) {
    const column = fieldColumn(field.id);
    const ids = new Set<string>();
    for (const { table, row } of rows) {
      if (row === null || !table.compiled.place.has(field.id)) continue;
      for (const id of linkIds(decodeLink(row[column], dialect))) ids.add(id);
    }
    const target = await catalog.find(db, linkOptions(field).table);
    if (!target) continue;
    const found = new Map<string, RawRow | string>();
    const list = [...ids];
    const rendered = recordsInSql(database, target);
    const read = listStatement(database, target, rendered ? 'expand-records' : 'expand', (arg) => {
      // Unquoted rh_ names (link-dialect.ts, listRows). The rows' own links are rendered as ids: read as their JSON text (LinkSql.linkJson).
      const links = new Set(target.compiled.fields.filter((f) => isLinkField(f.field)).map((f) => f.column));
      const columns = rendered
        ? sql`rh_t."id" as "id", ${sql.raw(exactRecordJsonSql(target, 'rh_t', dialect))} as "record"`
        : sql.join(target.compiled.columns.map((c) => (links.has(c) ? sql`${dialect.links.linkJson(sql.raw(`rh_t."${c}"`))} as ${sql.raw(`"${c}"`)}` : sql.raw(`rh_t."${c}"`))));
      return sql`select ${columns} from ${sql.table(target.physical)} as rh_t where rh_t.id in (select rh_id from ${dialect.links.listRows(listParams(database, arg, 1), ['rh_id'])})`;
    });
    for (let i = 0; i < list.length; i += PER_READ) {
      // A read as a page's: on SQLite's read connection outside a transaction (readRows).
      const part = await readRows(db, read.with(dialect.links.bindList([list.slice(i, i + PER_READ)])));
      for (const r of part as RawRow[]) found.set(r.id, rendered ? (r.record as string) : r);
    }
    out.set(field.id, { table: target, multiple: linkOptions(field).multiple, rows: found });
  }
  return out;
}
