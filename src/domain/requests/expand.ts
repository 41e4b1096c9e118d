import { type ErrorDetail, invalid } from '../errors.ts';
import type { FieldDef } from '../field-types/field-type.ts';
import { isLinkField } from '../field-types/link.ts';
import type { FieldLookup } from '../row-columns.ts';

/**
 * `expand=customer,lines` (CONTRACT §11): link fields whose ids an answer replaces with the linked
 * rows' records, one level. At most MAX_EXPAND codes, each a link field (of the table, or for a
 * batch of some table of it).
 */
export const MAX_EXPAND = 10;

/** The codes of `expand` as given (none when absent); problems go to `details`. */
function expandCodes(text: unknown, details: ErrorDetail[]): string[] {
  if (text === undefined) return [];
  if (typeof text !== 'string') {
    details.push({ path: 'expand', message: 'must be given once, as comma-separated field codes' });
    return [];
  }
  const codes = text.split(',').map((c) => c.trim());
  if (codes.some((c) => c === '')) details.push({ path: 'expand', message: 'must be comma-separated field codes, none empty' });
  if (codes.length > MAX_EXPAND) details.push({ path: 'expand', message: `names more than ${MAX_EXPAND} fields` });
  const seen = new Set<string>();
  for (const c of codes) {
    if (seen.has(c)) details.push({ path: 'expand', message: `names ${c} twice` });
    seen.add(c);
  }
  return details.length > 0 ? [] : codes;
}

/** `expand` of a request on one table: its link fields, or problems in `details`. */
export function parseExpand(text: unknown, table: FieldLookup, details: ErrorDetail[]): FieldDef[] {
  const out: FieldDef[] = [];
  for (const code of expandCodes(text, details)) {
    const field = table.fieldsByCode.get(code);
    if (!field) details.push({ path: 'expand', message: `${code} is not a field of this table` });
    else if (!isLinkField(field)) details.push({ path: 'expand', message: `${code} is not a link field (a ${field.type})` });
    else out.push(field);
  }
  return out;
}

/** `expand` of a single-table request (GET, POST, PATCH /rows…), or a 400. */
export function expandOf(query: unknown, table: FieldLookup): FieldDef[] {
  const details: ErrorDetail[] = [];
  const fields = parseExpand((query as Record<string, unknown> | undefined)?.expand, table, details);
  if (details.length > 0) throw invalid(details, 'Invalid expand');
  return fields;
}

/** `expand` of a batch: each code names the link fields of that code in the batch's tables; a code none has is a 400. */
export function batchExpandOf(query: unknown, tables: Iterable<FieldLookup>): FieldDef[] {
  const details: ErrorDetail[] = [];
  const codes = expandCodes((query as Record<string, unknown> | undefined)?.expand, details);
  const out: FieldDef[] = [];
  const all = [...tables];
  for (const code of codes) {
    const fields = all.map((t) => t.fieldsByCode.get(code)).filter((f): f is FieldDef => f !== undefined && isLinkField(f));
    if (fields.length === 0) details.push({ path: 'expand', message: `${code} is not a link field of any table of the batch` });
    out.push(...fields);
  }
  if (details.length > 0) throw invalid(details, 'Invalid expand');
  return out;
}
