import { type ErrorDetail, invalid } from '../errors.ts';
import { intParam, readQuery } from '../query-string.ts';
import type { FieldLookup } from '../row-columns.ts';
import { FILE_FORMATS, type FileFormat, TEXT_ENCODINGS, type TextEncoding } from '../file-formats.ts';
import { type RowSelection, parseSelection } from './row-list-query.ts';
import type { FieldDef } from '../field-types/field-type.ts';
import { parseExpand } from './expand.ts';

/** GET /rows-export's query string (the seed spec's "Export rows", CONTRACT §7). */

const EXPORT_PARAMS = ['format', 'encoding', 'newline', 'header', 'limit', 'filter', 'sort', 'expand'] as const;
type ExportParam = (typeof EXPORT_PARAMS)[number];
const NEWLINES = ['crlf', 'lf'] as const;

function oneOf<T extends string>(name: string, value: string | undefined, allowed: readonly T[], details: ErrorDetail[]): T | undefined {
  if (value === undefined) details.push({ path: name, message: `is required: one of ${allowed.join(', ')}` });
  else if (!(allowed as readonly string[]).includes(value)) details.push({ path: name, message: `must be one of ${allowed.join(', ')}` });
  else return value as T;
  return undefined;
}

export interface ExportQuery {
  format: FileFormat;
  encoding: TextEncoding;
  newline: (typeof NEWLINES)[number];
  header: boolean;
  limit: number | null;
  selection: RowSelection;
  /** Link fields whose linked rows each line carries (jsonl only). */
  expand: FieldDef[];
}

/** Reads and checks the whole query; every problem is reported in one 400 (CONTRACT §3). */
export function readExportQuery(query: Record<string, unknown>, table: FieldLookup): ExportQuery {
  const details: ErrorDetail[] = [];
  const params = readQuery(query, EXPORT_PARAMS, details);
  // A parameter given more than once is reported as such, not also as missing.
  const checked = <T extends string>(name: ExportParam, allowed: readonly T[]) =>
    query[name] !== undefined && params[name] === undefined ? undefined : oneOf<T>(name, params[name], allowed, details);
  const format = checked<FileFormat>('format', FILE_FORMATS);
  const encoding = checked<TextEncoding>('encoding', TEXT_ENCODINGS);
  const newline = checked<(typeof NEWLINES)[number]>('newline', NEWLINES);
  if (params.header !== undefined && params.header !== 'true' && params.header !== 'false') {
    details.push({ path: 'header', message: 'must be true or false' });
  }
  const limit = params.limit === undefined ? null : intParam('limit', params.limit, 1, 1000, 1000, details);
  const selection = parseSelection(params, table, details);
  const expand = parseExpand(params.expand, table, details);
  if (expand.length > 0 && format !== undefined && format !== 'jsonl') details.push({ path: 'expand', message: 'is for jsonl exports: a csv or tsv cell holds ids' });
  if (details.length > 0 || !format || !encoding || !newline) throw invalid(details, 'Invalid export query');
  return { format, encoding, newline, header: params.header !== 'false', limit, selection, expand };
}
