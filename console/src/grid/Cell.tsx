import type { Field } from '../api.ts';
import { type FileValue, linkIds, valueText } from '../field-types.ts';

/** A dateTime as people read it (UTC, to the second unless it has milliseconds), the full value kept for copying. */
function dateTimeText(iso: string): string {
  return iso.replace('T', ' ').replace(/\.000Z$/, 'Z');
}

/**
 * A value shown in its cell, always as text (React escapes it: a value `<img onerror=…>` is shown,
 * never run): dates, booleans, select chips, a JSON preview of records and lists, a file's name
 * as its download link.
 */
export function CellValue({ field, value, onOpenLink }: { field: Field; value: unknown; onOpenLink?: (field: Field, id: string) => void }) {
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
    case 'link':
      return <LinkChips field={field} value={value} onOpen={onOpenLink} inGrid />;
    default:
      return <span>{valueText(field, value)}</span>;
  }
}

/** A link's ids as chips, each a button opening the linked row (in its own table's grid). */
export function LinkChips({ field, value, onOpen, inGrid = false }: { field: Field; value: unknown; onOpen?: (field: Field, id: string) => void; inGrid?: boolean }) {
  const ids = linkIds(value);
  if (ids.length === 0) return <span className="empty-text">{inGrid ? '' : 'no links'}</span>;
  return (
    <span className="chips">
      {ids.map((id) => (
        <button key={id} type="button" className="chip link-chip" tabIndex={inGrid ? -1 : undefined} aria-label={`Open linked row ${id} (${field.name})`} onClick={() => onOpen?.(field, id)}>
          {id}
        </button>
      ))}
    </span>
  );
}
