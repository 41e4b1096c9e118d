/** A JSON object (not null, not an array): what a body or a parsed parameter must be before its keys are read. */
export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * How deep a list or record value may nest arrays and objects, itself the first level. SQLite's
 * JSON functions stop at 1,000 levels (a `_contains` filter over a deeper value fails), and walking
 * deep values recursively overflows the stack long before the body limit is reached.
 */
export const MAX_VALUE_DEPTH = 64;

/** How deep a JSON request body may nest arrays and objects: room for a row value of MAX_VALUE_DEPTH inside any request's envelope. */
export const MAX_BODY_DEPTH = 100;

/**
 * Where `value` nests arrays and objects more than `max` levels deep (itself the first), as a path
 * suffix (`.key`, `[i]`) to the first array or object past the limit; null when it does not. Never
 * descends further than `max + 1` levels, so it is safe on any value JSON.parse returns.
 */
export function tooDeepAt(value: unknown, max: number): string | null {
  if (typeof value !== 'object' || value === null) return null;
  if (max <= 0) return '';
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const at = tooDeepAt(value[i], max - 1);
      if (at !== null) return `[${i}]${at}`;
    }
    return null;
  }
  for (const key in value) {
    const at = tooDeepAt((value as Record<string, unknown>)[key], max - 1);
    if (at !== null) return `.${key}${at}`;
  }
  return null;
}
