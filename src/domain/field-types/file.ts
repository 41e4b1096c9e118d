import { MAX_FILE_NAME_LENGTH, fileNameProblem } from '../file-names.ts';
import { type FieldDef, type FieldType, fail, jsonColumn, ok } from './field-type.ts';
import type { StoredFile } from '../file-value.ts';

export const isFileField = (f: FieldDef): boolean => f.type === 'file';

/** File ids are those file-upload-url issues. */
const FILE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function fileSummary(value: unknown): { name: unknown; mimeType: unknown; size: unknown } {
  const v = value as Record<string, unknown>;
  return { name: v.name, mimeType: v.mimeType ?? null, size: v.size ?? null };
}

/**
 * On write `{id, name}` (a value as read may be written back: its other keys are ignored); stored
 * with the file's type and size once attached (files/files.ts); read with a signed download URL.
 */
export const fileType: FieldType = {
  name: 'file',
  column: 'json',
  optionsSchema: { type: 'object', additionalProperties: false },
  parse(value) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      return fail('must be an object {id, name}');
    }
    const { id, name, ...rest } = value as Record<string, unknown>;
    if (typeof id !== 'string' || !FILE_ID.test(id)) return fail('id must be a file id returned by file-upload-url');
    if (typeof name !== 'string') return fail('name must be the file name, a string');
    const problem = fileNameProblem(name);
    if (problem) return fail(`name ${problem}`);
    const extra = Object.keys(rest).filter((k) => !['mimeType', 'size', 'url', 'expiresAt'].includes(k));
    if (extra.length > 0) return fail(`unknown key ${extra[0]}; a file value is {id, name}`);
    return ok({ id, name });
  },
  ...jsonColumn,
  withLinks: (value, link) => {
    const file = value as StoredFile;
    return { id: file.id, name: file.name, mimeType: file.mimeType ?? null, size: file.size ?? null, ...link(file) };
  },
  // Exports carry the file's name, type and size: never its contents or a download URL. So an
  // import cannot bring a file back: the column is skipped, with a warning.
  importable: false,
  toText: (value) => JSON.stringify(fileSummary(value)),
  toExport: (value) => {
    const { url: _url, expiresAt: _expiresAt, ...rest } = value as Record<string, unknown>;
    return rest;
  },
  filterOps: [],
  sortable: false,
  valueSchema: () => ({
    type: 'object',
    properties: {
      id: { type: 'string', format: 'uuid' },
      name: { type: 'string' },
      mimeType: { type: ['string', 'null'] },
      size: { type: ['integer', 'null'], minimum: 0 },
      url: { type: 'string', format: 'uri', description: 'Download URL, signed, valid until expiresAt (1 hour).' },
      expiresAt: { type: 'string', format: 'date-time' },
    },
    required: ['id', 'name', 'mimeType', 'size', 'url', 'expiresAt'],
    additionalProperties: false,
  }),
  writeSchema: () => ({
    type: 'object',
    description: 'A file uploaded for this row (file-upload-url, then PUT), and the name to offer it under. A value as read may be written back.',
    properties: {
      id: { type: 'string', format: 'uuid' },
      name: { type: 'string', minLength: 1, maxLength: MAX_FILE_NAME_LENGTH, pattern: '^[^/\\\\\\u0000-\\u001f\\u007f-\\u009f]+$' },
      mimeType: {},
      size: {},
      url: {},
      expiresAt: {},
    },
    required: ['id', 'name'],
    additionalProperties: false,
  }),
};
