/** The system fields of a record's JSON text (render/row-json.ts), shared with the SQL that renders records (store/record-json-sql.ts). */

/** A record's text between its id and its first value: the system fields and the opening of `values`. */
export function systemJson(createdAt: string, updatedAt: string, createdBy: unknown, updatedBy: unknown): string {
  return `,"createdAt":"${createdAt}","updatedAt":"${updatedAt}","createdBy":${JSON.stringify(createdBy)},"updatedBy":${JSON.stringify(updatedBy)},"values":{`;
}

/** That text for every row a write creates (RowStore.newRow): made and updated at `now` by `memberId`. */
export function newRowSystemJson(ctx: { now: string; memberId: string }): string {
  return systemJson(ctx.now, ctx.now, ctx.memberId, ctx.memberId);
}
