import type { FieldDef, FieldType } from './field-types/field-type.ts';
import { fieldType, nullValueOf } from './field-types/registry.ts';
import { SYSTEM_ORDER, fieldColumn } from './row-columns.ts';

/** A field of a table version as rows are read, written and rendered. */
export interface CompiledField {
  field: FieldDef;
  code: string;
  /** `"code":`, escaped once: the field's key in a record's JSON text (render/row-json.ts). */
  key: string;
  /** The physical column. */
  column: string;
  type: FieldType;
  /** The value read where the column holds null, and its JSON text (`null`; `[]` for a multiple link). */
  nullValue: unknown;
  nullJson: string;
}

let slots = 0;

/**
 * A layer's place on every compiled table, for what it compiles from a table version (statements,
 * documents): made once, at module level, by the layer that owns it, so the domain never knows
 * what the layers above keep. `make` answers the empty holder, filled by the layer as it needs.
 */
export class TableMemo<T> {
  /** Its index in each CompiledTable's memos: one array read per lookup, no hashing. */
  readonly slot = slots++;

  constructor(
    /** What it holds, for whoever reads a heap snapshot. */
    readonly holds: string,
    readonly make: () => T,
  ) {}
}

/**
 * What every request to one table version needs from its fields, made once when the catalog
 * (store/table-catalog.ts) loads the version: a new version is a new CompiledTable, so nothing
 * kept here can outlive the fields it was made from. A table version is loaded by the catalog of
 * one database, so what a layer compiles for it is compiled for that database.
 */
export class CompiledTable {
  /** The physical columns a row is read as: the system columns (SYSTEM_ORDER), then the fields'. */
  readonly columns: readonly string[];
  /** The fields, in order: field i is `columns[SYSTEM_ORDER.length + i]`. */
  readonly fields: readonly CompiledField[];
  /** Each field's place in `columns`, by field id. */
  readonly place: ReadonlyMap<string, number>;
  /** The required fields (a write that creates a row must give them). */
  readonly required: readonly FieldDef[];
  private readonly memos: unknown[] = [];

  constructor(fields: readonly FieldDef[]) {
    this.fields = fields.map((f) => {
      const nullValue = nullValueOf(f);
      return { field: f, code: f.code, key: `${JSON.stringify(f.code)}:`, column: fieldColumn(f.id), type: fieldType(f.type), nullValue, nullJson: JSON.stringify(nullValue) };
    });
    this.columns = [...SYSTEM_ORDER.map((c) => c.column), ...this.fields.map((f) => f.column)];
    this.place = new Map(fields.map((f, i) => [f.id, SYSTEM_ORDER.length + i]));
    this.required = fields.filter((f) => f.required);
  }

  /** What `memo`'s layer keeps for this table version, its holder made on first use. */
  memo<T>(memo: TableMemo<T>): T {
    let held = this.memos[memo.slot] as T | undefined;
    if (held === undefined) {
      held = memo.make();
      this.memos[memo.slot] = held;
    }
    return held;
  }
}
