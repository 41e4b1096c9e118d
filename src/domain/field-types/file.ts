import { type FieldType, fail, jsonColumn, ok } from './field-type.ts';

function fileSummary(value: unknown): { name: unknown; mimeType: unknown; size: unknown } {
  const v = value as Record<string, unknown>;
  return { name: v.name, mimeType: v.mimeType ?? null, size: v.size ?? null };
}

/** On write `{id, name}`; the stored value is that reference, enriched on read by the files module. */
export const fileType: FieldType = {
  name: 'file',
  column: 'json',
  optionsSchema: { type: 'object', additionalProperties: false },
  parse(value) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      return fail('must be an object {id, name}');
    }
    const { id, name, ...rest } = value as Record<string, unknown>;
    if (typeof id !== 'string' || id.length === 0) return fail('id must be the id returned by file-upload-url');
    if (typeof name !== 'string' || name.length === 0 || name.length > 255) return fail('name must be a file name of 1 to 255 characters');
    const extra = Object.keys(rest).filter((k) => !['mimeType', 'size', 'url', 'expiresAt'].includes(k));
    if (extra.length > 0) return fail(`unknown key ${extra[0]}; a file value is {id, name}`);
    return ok({ id, name });
  },
  ...jsonColumn,
  // Exports carry the file's name, type and size: never its contents or a download URL.
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
      id: { type: 'string' },
      name: { type: 'string' },
      mimeType: { type: 'string' },
      size: { type: 'integer' },
      url: { type: 'string', format: 'uri' },
      expiresAt: { type: 'string', format: 'date-time' },
    },
    required: ['id', 'name'],
  }),
};
