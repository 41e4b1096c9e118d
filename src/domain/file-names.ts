/** File names as a `file` value carries them (CONTRACT §8): what a name may be. */

/** The longest file name accepted on write, in characters (code points): what most file systems allow. */
export const MAX_FILE_NAME_LENGTH = 255;

/** C0 and C1 control characters and DEL: CR, LF and NUL among them. */
const CONTROL = /\p{Cc}/u;

/**
 * Why `name` cannot be a stored file's name, or null when it can. Refused: empty (or only spaces), over 255
 * characters, control characters (CR, LF, NUL, …), path separators `/` and `\`, `.` and `..`, and text
 * that is not well-formed Unicode (a lone surrogate, which no UTF-8 can carry). A `"` is allowed
 * (`report "final".pdf`): the download's Content-Disposition quotes it (files/disposition.ts).
 */
export function fileNameProblem(name: string): string | null {
  if (name.trim() === '') return 'must not be empty or only spaces';
  if ([...name].length > MAX_FILE_NAME_LENGTH) return `must be at most ${MAX_FILE_NAME_LENGTH} characters`;
  if (!name.isWellFormed()) return 'must be well-formed Unicode (it holds a lone surrogate)';
  if (CONTROL.test(name)) return 'must not contain control characters (such as CR, LF or NUL)';
  if (name.includes('/') || name.includes('\\')) return 'must not contain / or \\';
  if (name === '.' || name === '..') return 'must not be . or ..';
  return null;
}

