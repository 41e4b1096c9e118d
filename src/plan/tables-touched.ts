import type { FieldDef } from '../domain/field-types/field-type.ts';
import { isLinkField, linkOptions } from '../domain/field-types/link.ts';
import type { TableDef } from '../domain/table.ts';
import type { RowFilter } from '../domain/row-filter.ts';
import { linkQuantifiers } from '../domain/row-filter-match.ts';
import type { RowReadPlan } from './row-plans.ts';

/**
 * The tables a request reads besides the one it names: those its link filters look through and
 * those its `expand` reads rows of (CONTRACT §11). For access checks (scoped keys, CONTRACT §12):
 * a key allowed to read the named table only must not read the others through it.
 */

/**
 * The ids of the tables a filter's `_some`, `_none` and `_every` read rows of, at every depth.
 * `_has` and `_eq` name a linked row's id, which the row's own value holds: they read nothing of
 * the target table (CONTRACT §12 asks rows:read there of `expand` and the `_some`-style filters).
 */
export function filterTables(filter: RowFilter | null, into = new Set<string>()): Set<string> {
  for (const through of linkQuantifiers(filter)) {
    into.add(through.table);
    filterTables(through.filter, into);
  }
  return into;
}

/** The ids of the tables expanded link fields read rows of. */
export function expandTables(fields: readonly FieldDef[], into = new Set<string>()): Set<string> {
  for (const f of fields) into.add(linkOptions(f).table);
  return into;
}

/** Every table a read plan touches: its own first, then those of its link filters and its expand. */
export function readPlanTables(plan: RowReadPlan): string[] {
  return ownFirst(plan.table.id, expandTables(plan.expand, filterTables(plan.selection.filter)));
}

/** A plan's own table, then the others it reaches (its own left out of those). */
export function ownFirst(tableId: string, reached: Set<string>): string[] {
  reached.delete(tableId);
  return [tableId, ...reached];
}

/**
 * The tables whose rows a write to `table` may change besides its own (CONTRACT §11): writing
 * values, the tables of its pairs' other fields (their values follow); deleting rows, the tables
 * whose links point at it (unlink rewrites their values, cascade deletes their rows, further
 * cascades not included).
 */
export function writeTables(table: TableDef, kind: 'write' | 'delete'): string[] {
  const out = new Set<string>();
  if (kind === 'write') {
    for (const f of table.fields) if (isLinkField(f) && linkOptions(f).inverseField !== undefined) out.add(linkOptions(f).table);
  } else {
    for (const l of table.incoming) out.add(l.tableId);
  }
  out.delete(table.id);
  return [...out];
}
