import { create } from 'content-disposition';
import { MAX_FILE_NAME_LENGTH } from '../domain/file-names.ts';

/** C0 and C1 control characters and DEL: CR, LF and NUL among them. */
const CONTROLS = /\p{Cc}/gu;
/**
 * Invisible characters that reorder or break the text around them: with U+202E a name ending in
 * "fdp.exe" shows as "exe.pdf". Not refused on write (they are legitimate in right-to-left names),
 * but never offered as a download name.
 */
const DECEPTIVE = /[\p{Bidi_Control}\u2028\u2029]/gu;

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
