import type { FieldDef } from './field-types/field-type.ts';

/** A user table's definition, as requests are planned against it (loaded by store/table-catalog.ts). */
export interface TableDef {
  id: string;
  code: string | null;
  name: string;
  version: number;
  /** The SQL table holding its rows. */
  physical: string;
  fields: FieldDef[];
  fieldsByCode: Map<string, FieldDef>;
  /** Whether a field holds files: its writes then attach and release them (files/files.ts). */
  hasFiles: boolean;
}
