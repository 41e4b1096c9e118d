import { isLinkField, linkOptions } from '../../domain/field-types/link.ts';
import type { FieldLookup } from '../../domain/row-columns.ts';
import { MAX_LINK_DEPTH } from '../../domain/row-filter.ts';
import type { TableDef } from '../../domain/table.ts';
import type { MetaDb } from '../meta-schema.ts';
import type { TableCatalog } from '../table-catalog.ts';

/**
 * The table as a filter is parsed against it: with the tables its links lead to, as far as a
 * filter may follow them (MAX_LINK_DEPTH), so `_some`, `_none` and `_every` can be read in the
 * target tables' grammar. A table without link fields is itself (nothing looked up).
 */
export async function withLinkedTables(catalog: TableCatalog, db: MetaDb, table: TableDef): Promise<FieldLookup> {
  if (!table.fields.some(isLinkField)) return table;
  const linked = new Map<string, FieldLookup>();
  let frontier: TableDef[] = [table];
  for (let level = 0; level < MAX_LINK_DEPTH && frontier.length > 0; level++) {
    const next: TableDef[] = [];
    for (const t of frontier) {
      for (const f of t.fields) {
        if (!isLinkField(f)) continue;
        const id = linkOptions(f).table;
        if (id === table.id || linked.has(id)) continue;
        const def = await catalog.find(db, id);
        if (!def) continue;
        linked.set(id, def);
        next.push(def);
      }
    }
    frontier = next;
  }
  return { id: table.id, fields: table.fields, fieldsByCode: table.fieldsByCode, linked };
}
