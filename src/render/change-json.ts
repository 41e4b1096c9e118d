import type { Meta } from '../store/meta-schema.ts';

/**
 * One change of the change log as the feed answers it and a webhook carries it; `row` and
 * `changedFields` are spliced in as the JSON text they are kept as.
 */
export function changeJson(c: Meta['rh_changes']): string {
  return (
    `{"sequence":${Number(c.sequence)},"type":${JSON.stringify(c.type)},"tableId":${JSON.stringify(c.tableId)},"rowId":${JSON.stringify(c.rowId)},` +
    `"row":${c.row ?? 'null'},"changedFields":${c.changedFields ?? 'null'},"occurredAt":"${c.occurredAt}","memberId":${JSON.stringify(c.memberId)}}`
  );
}
