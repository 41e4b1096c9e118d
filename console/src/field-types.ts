import type { Field, FieldType } from './types.ts';

/**
 * What the console knows of each field type, as the API reference states it (docs/api.md, CONTRACT
 * §4 and §6): its label, whether it sorts, the filter operators it takes, and the options its
 * editor shows. The service stays the judge: anything it refuses comes back as a 400 and is shown.
 */
export interface TypeInfo {
  label: string;
  sortable: boolean;
  ops: readonly FilterOp[];
}

export type FilterOp = '_eq' | '_gt' | '_gte' | '_lt' | '_lte' | '_contains' | '_startsWith' | '_endsWith' | '_isNull' | '_has' | '_some' | '_none' | '_every';

const ORDER: FilterOp[] = ['_eq', '_gt', '_gte', '_lt', '_lte', '_isNull'];
const TEXT: FilterOp[] = [...ORDER.slice(0, 5), '_contains', '_startsWith', '_endsWith', '_isNull'];

export const FIELD_TYPES: Record<FieldType, TypeInfo> = {
  text: { label: 'Text', sortable: true, ops: TEXT },
  number: { label: 'Number', sortable: true, ops: ORDER },
  boolean: { label: 'Boolean', sortable: true, ops: ['_eq', '_isNull'] },
  dateTime: { label: 'Date and time', sortable: true, ops: ORDER },
  date: { label: 'Date', sortable: true, ops: ORDER },
  time: { label: 'Time', sortable: true, ops: ORDER },
  yearMonth: { label: 'Year and month', sortable: true, ops: ORDER },
  select: { label: 'Select', sortable: true, ops: TEXT },
  record: { label: 'Record (JSON object)', sortable: false, ops: ['_isNull'] },
  list: { label: 'List (JSON array)', sortable: false, ops: ['_contains', '_isNull'] },
  file: { label: 'File', sortable: false, ops: ['_isNull'] },
  // Links (CONTRACT §11): `_has` one id; `_some`/`_none`/`_every` look through the link (the filter builder's link conditions).
  link: { label: 'Link to rows of a table', sortable: false, ops: ['_has', '_some', '_none', '_every', '_isNull'] },
};

export const OP_LABELS: Record<FilterOp, string> = {
  _eq: 'equals',
  _gt: 'greater than',
  _gte: 'at least',
  _lt: 'less than',
  _lte: 'at most',
  _contains: 'contains',
  _startsWith: 'starts with',
  _endsWith: 'ends with',
  _isNull: 'is empty',
  _has: 'links to',
  _some: 'some linked row matches',
  _none: 'no linked row matches',
  _every: 'every linked row matches',
};

/** The system columns every row has, as filters and sorts name them. */
export const SYSTEM_COLUMNS = ['id', 'createdAt', 'updatedAt', 'createdBy', 'updatedBy'] as const;
export const SYSTEM_OPS: readonly FilterOp[] = TEXT.filter((op) => op !== '_isNull');

export interface FileValue {
  id: string;
  name: string;
  mimeType?: string | null;
  size?: number;
  url?: string;
}

/** A value as one line of text: what a cell shows, what is copied out, what an editor starts from. */
export function valueText(field: Field, value: unknown): string {
  if (value === null || value === undefined) return '';
  switch (field.type) {
    case 'record':
    case 'list':
      return JSON.stringify(value);
    case 'file':
      return (value as FileValue).name ?? '';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'link':
      return linkIds(value).join(', ');
    default:
      return String(value);
  }
}

/** A link value's ids (one, or a multiple link's list, CONTRACT §11). */
export function linkIds(value: unknown): string[] {
  if (value === null || value === undefined) return [];
  return Array.isArray(value) ? value.map(String) : [String(value)];
}

/**
 * Text typed or pasted into a cell as the value to write. Empty text is null. Text that does not
 * read as the type (a number field's `abc`) is sent as it is, for the service to refuse with its
 * own message on that cell.
 */
export function textValue(field: Field, text: string): unknown {
  const t = text.trim();
  if (t === '') return null;
  switch (field.type) {
    case 'number': {
      const n = Number(t);
      return Number.isFinite(n) && /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(t) ? n : text;
    }
    case 'boolean': {
      const lower = t.toLowerCase();
      if (['true', 'yes', '1', 'y'].includes(lower)) return true;
      if (['false', 'no', '0', 'n'].includes(lower)) return false;
      return text;
    }
    case 'record':
    case 'list':
      try {
        return JSON.parse(t);
      } catch {
        return text;
      }
    case 'link':
      // Ids separated by commas (or spaces): a multiple link takes the list, a single one the id.
      if (field.options.multiple === true) return t.split(/[\s,]+/).filter((id) => id !== '');
      return t;
    case 'text':
      return text;
    default:
      return t;
  }
}

/** Whether the grid edits this type as text (a file is changed through its own flow). */
export const editableAsText = (field: Field) => field.type !== 'file';

/** The operators that look through a link: their value is a filter of the linked table. */
export const LINK_OPS: readonly FilterOp[] = ['_some', '_none', '_every'];

/** A filter's comparison value from the builder's text, by the type of what it compares. */
export function filterValue(type: FieldType | 'system', op: FilterOp, text: string): unknown {
  if (op === '_isNull') return text !== 'false';
  if (LINK_OPS.includes(op)) {
    // A filter in the linked table's grammar, as JSON (sent as typed when it does not parse, for the service to refuse).
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  if (type === 'number') {
    const n = Number(text);
    return text.trim() !== '' && Number.isFinite(n) ? n : text;
  }
  if (type === 'boolean') return text === 'true' ? true : text === 'false' ? false : text;
  return text;
}
