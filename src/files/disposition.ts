import { MAX_FILE_NAME_LENGTH } from '../domain/file-names.ts';

/** C0 and C1 control characters and DEL: CR, LF and NUL among them. */
const CONTROLS = /\p{Cc}/gu;
/**
 * Invisible characters that reorder or break the text around them: with U+202E a name ending in
 * "fdp.exe" shows as "exe.pdf". Not refused on write (they are legitimate in right-to-left names),
 * but never offered as a download name.
 */
const DECEPTIVE = /[\p{Bidi_Control}\u2028\u2029]/gu;

/** The name as it can be offered at all: printable, one path segment, not too long, or null when nothing is left. */
function offerable(name: string): string | null {
  const cleaned = name
    .toWellFormed()
    .replace(CONTROLS, '')
    .replace(DECEPTIVE, '')
    .replace(/[/\\]/g, '_')
    // Leading dots would make a hidden file, or `.` and `..`; browsers drop them too.
    .replace(/^\.+/u, '');
  // Nothing but dots and spaces (`.`, `..`) names no file.
  if (/^[\s.]*$/u.test(cleaned)) return null;
  const chars = [...cleaned];
  if (chars.length <= MAX_FILE_NAME_LENGTH) return cleaned;
  const extension = /\.[^.]{1,16}$/u.exec(cleaned)?.[0] ?? '';
  return chars.slice(0, MAX_FILE_NAME_LENGTH - [...extension].length).join('') + extension;
}

/**
 * The plain `filename`, for clients without RFC 8187 `filename*`: printable ASCII (accents dropped,
 * é → e; other characters as `_`), `"` as `'` so that it needs no escape inside its quotes, no
 * leading or trailing spaces, and `download`
 * for a stem left with no letter or digit.
 */
function plainName(name: string): string {
  const ascii = name
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .replace(/[^\x20-\x7e]/g, '_')
    .replace(/"/g, "'")
    .replace(/^\s+|\s+$/g, '');
  const extension = /\.[A-Za-z0-9]{1,16}$/.exec(ascii)?.[0] ?? '';
  const stem = ascii.slice(0, ascii.length - extension.length);
  return /[A-Za-z0-9]/.test(stem) ? ascii : `download${extension}`;
}

/** RFC 8187 `ext-value`: UTF-8, every octet outside attr-char percent-encoded. */
function extendedValue(name: string): string {
  return `UTF-8''${encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}

/**
 * A `Content-Disposition: attachment` value for a download named `name`, safe whatever the name (no
 * control characters, no path): the plain name always quoted, and beside it `filename*` with the
 * name itself whenever the plain one differs from it (a `"`, a leading space, a non-ASCII
 * character), so that a client reading RFC 6266 saves the file under the name it was stored with.
 */
export function attachment(name: string): string {
  const exact = offerable(name) ?? 'download';
  const plain = plainName(exact);
  const header = `attachment; filename="${plain}"`;
  return plain === exact ? header : `${header}; filename*=${extendedValue(exact)}`;
}
