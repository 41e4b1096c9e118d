/** The API's shapes the console reads and writes (pure types: no DOM, so the suite's Node tests can import them). */

export interface ErrorDetail {
  path: string;
  message: string;
}

export type FieldType =
  | 'text' | 'number' | 'boolean' | 'dateTime' | 'date' | 'time' | 'yearMonth' | 'select' | 'record' | 'list' | 'file' | 'link';

export interface Field {
  id?: string;
  code: string;
  name: string;
  type: FieldType;
  required?: boolean;
  options: Record<string, unknown>;
}

export interface Table {
  id: string;
  code: string | null;
  name: string;
  description: string | null;
  fields: Field[];
  createdAt: string;
  updatedAt: string;
}

export interface Row {
  id: string;
  createdAt: string;
  updatedAt: string;
  createdBy: string;
  updatedBy: string;
  values: Record<string, unknown>;
}

export interface Page {
  data: Row[];
  nextUrl: string | null;
}

/** One committed write, as the changes feed, the stream and a row's history give it (CONTRACT §14). */
export interface Change {
  sequence: number;
  type: 'create' | 'update' | 'delete';
  tableId: string;
  rowId: string;
  row: Row | null;
  changedFields: string[] | null;
  occurredAt: string;
  memberId: string;
}
