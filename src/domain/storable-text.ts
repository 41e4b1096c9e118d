/**
 * Text both databases store as given: PostgreSQL text and jsonb cannot hold U+0000, and a lone
 * UTF-16 surrogate is not Unicode (each database would silently replace it differently).
 */
export const UNSTORABLE_TEXT = 'must be valid Unicode text without the character U+0000';

const storable = (s: string) => !s.includes('\u0000') && s.isWellFormed();

/** The path of the first string in a JSON value (keys included) that cannot be stored as given, or null. */
export function unstorableTextAt(v: unknown, path: string): string | null {
  if (typeof v === 'string') return storable(v) ? null : path;
  if (Array.isArray(v)) {
    for (const [i, e] of v.entries()) {
      const at = unstorableTextAt(e, `${path}[${i}]`);
      if (at !== null) return at;
    }
  } else if (typeof v === 'object' && v !== null) {
    for (const [k, e] of Object.entries(v)) {
      if (!storable(k)) return path;
      const at = unstorableTextAt(e, `${path}.${k}`);
      if (at !== null) return at;
    }
  }
  return null;
}
