import type { FieldDef } from './field-types/field-type.ts';
import type { CompiledTable } from './compiled-table.ts';
import type { IncomingLink } from './field-types/link.ts';

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
  /**
   * The link fields (of any table, this one included) whose target is this table: deleting its
   * rows acts on them (onDelete). Adding, removing or changing one moves this table's version.
   */
  incoming: IncomingLink[];
  /** What requests to this version need from its fields, made once (the catalog makes it with the definition). */
  compiled: CompiledTable;
}
