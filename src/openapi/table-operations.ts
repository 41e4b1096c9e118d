import { type Grant, type Scope, coversTable, hasScope } from '../domain/access.ts';

/**
 * What each operation of a table's OpenAPI document (table-document.ts) needs of a key (CONTRACT
 * §12): every group, and one scope of each group. A table's document lists only the operations the
 * calling key may use. An operation missing here is listed to keys with every scope only (and
 * test/access/openapi-scopes.test.ts fails, naming it).
 */
export const OPERATION_SCOPES: Record<string, readonly (readonly Scope[])[]> = {
  listRows: [['rows:read']],
  getRow: [['rows:read']],
  listChanges: [['rows:read']],
  aggregateRows: [['rows:read']],
  streamChanges: [['rows:read']],
  changeStreamUrl: [['rows:read']],
  rowHistory: [['rows:read']],
  createRow: [['rows:create']],
  updateRow: [['rows:update']],
  deleteRow: [['rows:delete']],
  createRows: [['rows:create']],
  updateRows: [['rows:update']],
  deleteRows: [['rows:delete']],
  exportRows: [['rows:export']],
  fileUploadUrls: [['rows:create', 'rows:update']],
  importRows: [['rows:import'], ['rows:create']],
  batch: [['rows:create', 'rows:update', 'rows:delete']],
};

/** Whether a key with `grant` may use the operation on the table. */
export function mayUse(grant: Grant, tableId: string, operationId: string): boolean {
  if (!coversTable(grant, tableId)) return false;
  const groups = OPERATION_SCOPES[operationId] ?? [['*']];
  return groups.every((group) => group.some((scope) => hasScope(grant, scope)));
}

type Operations = Record<string, { operationId?: string } | unknown>;

/** The document with only the operations `allowed` lets through; a path left with none goes. */
export function withOperations(document: Record<string, unknown>, allowed: (operationId: string) => boolean): Record<string, unknown> {
  const paths: Record<string, Operations> = {};
  for (const [path, item] of Object.entries(document.paths as Record<string, Operations>)) {
    const kept = Object.entries(item).filter(([, op]) => {
      const id = (op as { operationId?: unknown } | null)?.operationId;
      return typeof id !== 'string' || allowed(id);
    });
    if (kept.some(([, op]) => typeof (op as { operationId?: unknown } | null)?.operationId === 'string')) paths[path] = Object.fromEntries(kept);
  }
  return { ...document, paths };
}
