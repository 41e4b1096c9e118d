import type { ErrorDetail } from './errors.ts';

/** Reading query strings whose parameters are given once each, some as URL-encoded JSON. */

/** A parameter's JSON text, parsed; a problem (and undefined) when it is not JSON. */
export function jsonParam(name: string, text: string | undefined, details: ErrorDetail[]): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    details.push({ path: name, message: 'is not valid JSON' });
    return undefined;
  }
}

/** The known parameters, each given at most once; unknown and repeated ones are problems (and read as absent). */
export function readQuery<K extends string>(query: Record<string, unknown>, allowed: readonly K[], details: ErrorDetail[]): Record<K, string | undefined> {
  for (const key of Object.keys(query)) {
    if (!(allowed as readonly string[]).includes(key)) details.push({ path: key, message: `unknown query parameter; use ${allowed.join(', ')}` });
  }
  const out = {} as Record<K, string | undefined>;
  for (const name of allowed) {
    const v = query[name];
    if (v !== undefined && typeof v !== 'string') details.push({ path: name, message: 'must be given once' });
    out[name] = typeof v === 'string' ? v : undefined;
  }
  return out;
}

/** An integer parameter within bounds; `fallback` when absent or wrong (the problem is reported). */
export function intParam(name: string, text: string | undefined, min: number, max: number, fallback: number, details: ErrorDetail[]): number {
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) {
    details.push({ path: name, message: `must be an integer from ${min} to ${max}` });
    return fallback;
  }
  return Number(text);
}
