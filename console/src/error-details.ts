/** Where a 400's detail points (pure: no DOM, so the suite's Node tests can import it). */
/** The field a detail's path names (`values.price`, `data[3].values.price`, `operations[2].values.price`), with the item's index when there is one. */
export function detailTarget(path: string): { index: number | null; field: string } | null {
  const m = /^(?:(?:data|operations)\[(\d+)\]\.)?values\.([A-Za-z][A-Za-z0-9_]*)/.exec(path);
  if (!m) return null;
  return { index: m[1] === undefined ? null : Number(m[1]), field: m[2] };
}
