/**
 * Text both databases store as given: PostgreSQL text and jsonb cannot hold U+0000, and a lone
 * UTF-16 surrogate is not Unicode (each database would silently replace it differently).
 */
export const UNSTORABLE_TEXT = 'must be valid Unicode text without the character U+0000';

const storable = (s: string) => !s.includes('\u0000') && s.isWellFormed();

/** The path of the first string in a JSON value (keys included) that cannot be stored as given, or null. */
export function unstorableTextAt(v: unknown, path: string): string | null {
  const below = firstUnstorable(v);
  return below === null ? null : path + below;
}

/** Where under `v` the first unstorable string is, as a path suffix ('' for `v` itself), or null. */
function firstUnstorable(v: unknown): string | null {
  if (typeof v === 'string') return storable(v) ? null : '';
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const at = firstUnstorable(v[i]);
      if (at !== null) return `[${i}]${at}`;
    }
  } else if (typeof v === 'object' && v !== null) {
    for (const k in v) {
      if (!storable(k)) return '';
      const at = firstUnstorable((v as Record<string, unknown>)[k]);
      if (at !== null) return `.${k}${at}`;
    }
  }
  return null;
}
