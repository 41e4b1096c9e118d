import type { FieldDef } from '../../domain/field-types/field-type.ts';
import { decodeLink, linkIds, linkOptions } from '../../domain/field-types/link.ts';
import { fieldColumn } from '../../domain/row-columns.ts';
import type { RawRow } from '../../domain/row.ts';
import type { TableDef } from '../../domain/table.ts';
import { type Db, readRows } from '../database.ts';
import type { Dialect } from '../dialect.ts';
import type { TableCatalog } from '../table-catalog.ts';

/** The rows an `expand`ed link field names, read once for a whole answer: its target table and those rows by id. */
export interface Expansion {
  table: TableDef;
  rows: ReadonlyMap<string, RawRow>;
}

/** Per expanded field id. */
export type Expanded = ReadonlyMap<string, Expansion>;

/**
 * Reads the rows the `fields` link to from the given rows (each of its own table), in one
 * statement per field and 1,000 ids. A field of a table none of the rows is of reads nothing.
 */
export async function expandLinks(db: Db, dialect: Dialect, catalog: TableCatalog, rows: readonly { table: TableDef; row: RawRow | null }[], fields: readonly FieldDef[]): Promise<Expanded> {
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
    const found = new Map<string, RawRow>();
    const list = [...ids];
    for (let i = 0; i < list.length; i += 1000) {
      // A read as a page's: on SQLite's read connection outside a transaction (readRows).
      const part = await readRows(db, db.selectFrom(target.physical).select(target.compiled.columns).where('id', 'in', list.slice(i, i + 1000)).compile());
      for (const r of part as RawRow[]) found.set(r.id, r);
    }
    out.set(field.id, { table: target, rows: found });
  }
  return out;
}
