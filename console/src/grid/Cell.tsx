import type { Field } from '../api.ts';
import { type FileValue, valueText } from '../field-types.ts';

/** A dateTime as people read it (UTC, to the second unless it has milliseconds), the full value kept for copying. */
function dateTimeText(iso: string): string {
  return iso.replace('T', ' ').replace(/\.000Z$/, 'Z');
}

/**
 * A value shown in its cell, always as text (React escapes it: a value `<img onerror=…>` is shown,
 * never run): dates, booleans, select chips, a JSON preview of records and lists, a file's name
 * as its download link.
 */
export function CellValue({ field, value }: { field: Field; value: unknown }) {
  if (value === null || value === undefined) return <span className="empty" aria-label="empty" />;
  switch (field.type) {
    case 'boolean':
      return <span className={value ? 'bool yes' : 'bool no'}>{value ? '✓ true' : '✗ false'}</span>;
    case 'select':
      return <span className="chip">{String(value)}</span>;
    case 'dateTime':
      return <time dateTime={String(value)}>{dateTimeText(String(value))}</time>;
    case 'date':
    case 'yearMonth':
      return <time dateTime={String(value)}>{String(value)}</time>;
    case 'number':
      return <span className="number">{String(value)}</span>;
    case 'record':
    case 'list':
      return <code className="json">{valueText(field, value)}</code>;
    case 'file': {
      const file = value as FileValue;
      return file.url ? (
        <a href={file.url} download={file.name} rel="noopener" tabIndex={-1}>
          {file.name}
        </a>
      ) : (
        <span>{file.name}</span>
      );
    }
    default:
      return <span>{valueText(field, value)}</span>;
  }
}
