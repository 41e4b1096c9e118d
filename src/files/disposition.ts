import { create } from 'content-disposition';

/** The longest file name accepted on write, in characters (code points): what most file systems allow. */
export const MAX_FILE_NAME_LENGTH = 255;

/** C0 and C1 control characters and DEL: CR, LF and NUL among them. */
const CONTROL = /\p{Cc}/u;
const CONTROLS = /\p{Cc}/gu;
/**
 * Invisible characters that reorder or break the text around them: with U+202E a name ending in
 * "fdp.exe" shows as "exe.pdf". Not refused on write (they are legitimate in right-to-left names),
 * but never offered as a download name.
 */
const DECEPTIVE = /[\p{Bidi_Control}\u2028\u2029]/gu;

/**
 * Why `name` cannot be a stored file's name, or null when it can. Refused: empty (or only spaces), over 255
 * characters, control characters (CR, LF, NUL, …), path separators `/` and `\`, `"` (it would need
 * escaping in every header and CSV it appears in), `.` and `..`, and text that is not well-formed
 * Unicode (a lone surrogate, which no UTF-8 can carry).
 */
export function fileNameProblem(name: string): string | null {
  if (name.trim() === '') return 'must not be empty or only spaces';
  if ([...name].length > MAX_FILE_NAME_LENGTH) return `must be at most ${MAX_FILE_NAME_LENGTH} characters`;
  if (!name.isWellFormed()) return 'must be well-formed Unicode (it holds a lone surrogate)';
  if (CONTROL.test(name)) return 'must not contain control characters (such as CR, LF or NUL)';
  if (name.includes('/') || name.includes('\\')) return 'must not contain / or \\';
  if (name.includes('"')) return 'must not contain "';
  if (name === '.' || name === '..') return 'must not be . or ..';
  return null;
}

/** Whatever it is given, a base name fit to offer for saving: one path segment, printable, not empty, not too long. */
function safeBaseName(name: string): string {
  const cleaned = name
    .toWellFormed()
    .replace(CONTROLS, '')
    .replace(DECEPTIVE, '')
    .replace(/[/\\]/g, '_')
    .replace(/"/g, "'")
    // Leading dots would make a hidden file, or `.` and `..`; browsers drop them too.
    .replace(/^[\s.]+|\s+$/g, '');
  if (cleaned === '') return 'download';
  const chars = [...cleaned];
  if (chars.length <= MAX_FILE_NAME_LENGTH) return cleaned;
  const extension = /\.[^.]{1,16}$/u.exec(cleaned)?.[0] ?? '';
  return chars.slice(0, MAX_FILE_NAME_LENGTH - [...extension].length).join('') + extension;
}

/**
 * The ASCII `filename` for clients without RFC 6266 `filename*`: accents dropped (é → e), other
 * characters as `_`, and `download` for a stem left with no letter or digit.
 */
function asciiFallback(name: string): string {
  const ascii = name
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .replace(/[^\x20-\x7e]/g, '_');
  const extension = /\.[A-Za-z0-9]{1,16}$/.exec(ascii)?.[0] ?? '';
  const stem = ascii.slice(0, ascii.length - extension.length);
  return /[A-Za-z0-9]/.test(stem) ? ascii : `download${extension}`;
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/**
 * A `Content-Disposition: attachment` value for a download named `name`, safe whatever the name: no
 * control characters, no path, `filename*=UTF-8''…` for a non-ASCII name beside an ASCII `filename`.
 */
export function attachment(name: string): string {
  const base = safeBaseName(name);
  // An ASCII name is written as `filename` alone (with `filename*` too when it holds a `%XX` that
  // a client might decode); any other gets an ASCII fallback better than the package's `?`s.
  return PRINTABLE_ASCII.test(base) ? create(base) : create(base, { fallback: asciiFallback(base) });
}
