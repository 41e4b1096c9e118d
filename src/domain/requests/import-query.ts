import { type ErrorDetail, invalid } from '../errors.ts';
import { FILE_FORMATS, type FileFormat, TEXT_ENCODINGS, type TextEncoding } from '../file-formats.ts';

/** POST /rows-import's query string: the body is the file, so its options come as query parameters. */

const IMPORT_PARAMS = ['format', 'encoding', 'mode', 'atomic'];

export interface ImportQuery {
  format: FileFormat;
  encoding: TextEncoding;
  /** Whether a row whose id exists is updated (upsert) or an error (create). */
  mode: 'create' | 'upsert';
  /** All rows or none (true), or every good row with the bad ones reported (false). */
  atomic: boolean;
}

/** `?format&encoding[&mode][&atomic]`, every problem at once. */
export function importQuery(query: Record<string, unknown>): ImportQuery {
  const details: ErrorDetail[] = [];
  for (const key of Object.keys(query)) {
    if (!IMPORT_PARAMS.includes(key)) details.push({ path: key, message: `unknown query parameter; use ${IMPORT_PARAMS.join(', ')}` });
  }
  const pick = <T extends string>(name: string, allowed: readonly T[], fallback?: T): T | undefined => {
    const value = query[name];
    if (value === undefined && fallback !== undefined) return fallback;
    if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
    details.push({ path: name, message: `${value === undefined ? 'is required: ' : 'must be '}one of ${allowed.join(', ')}` });
    return undefined;
  };
  const format = pick('format', FILE_FORMATS);
  const encoding = pick('encoding', TEXT_ENCODINGS);
  const mode = pick('mode', ['create', 'upsert'] as const, 'create');
  const atomic = pick('atomic', ['true', 'false'] as const, 'true');
  if (details.length > 0 || !format || !encoding || !mode || !atomic) throw invalid(details, 'Invalid import query');
  return { format, encoding, mode, atomic: atomic === 'true' };
}
