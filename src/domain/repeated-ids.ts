import type { ErrorDetail } from './errors.ts';

/** Every id that repeats an earlier one in a request, as a problem at its place (`data[3]`, `[3]`). */
export function repeatedIds(ids: readonly (string | undefined)[], key = ''): ErrorDetail[] {
  const first = new Map<string, number>();
  const problems: ErrorDetail[] = [];
  ids.forEach((id, i) => {
    if (id === undefined) return;
    const earlier = first.get(id);
    if (earlier === undefined) first.set(id, i);
    else problems.push({ path: `${key}[${i}]`, message: `repeats id ${id} of ${key}[${earlier}]: an id may appear once per request` });
  });
  return problems;
}
