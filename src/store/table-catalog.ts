import { isTableRef, isUuid } from '../domain/codes.ts';
import type { FieldDef, FieldTypeName } from '../domain/field-types/field-type.ts';
import type { Database, Db } from './database.ts';
import { MetadataCache } from './metadata-cache.ts';
import type { Dialect } from './dialect.ts';
import { cachedTemplate } from './query-template.ts';
import { physicalTable } from './user-tables.ts';

/** A user table's definition, as the rows routes plan against it. */
export interface TableDef {
  id: string;
  code: string | null;
  name: string;
  version: number;
  /** The SQL table holding its rows. */
  physical: string;
  fields: FieldDef[];
  fieldsByCode: Map<string, FieldDef>;
}


/** The fields of the given tables, in order, keyed by table id. */
export async function loadFields(db: Db, dialect: Dialect, tableIds: string[]): Promise<Map<string, FieldDef[]>> {
  const byTable = new Map<string, FieldDef[]>(tableIds.map((id) => [id, []]));
  if (tableIds.length === 0) return byTable;
  const rows = await db
    .selectFrom('rh_fields')
    .select(['id', 'tableId', 'code', 'name', 'type', 'required', 'options'])
    .where('tableId', 'in', tableIds)
    .orderBy('position')
    .execute();
  for (const r of rows) {
    byTable.get(r.tableId as string)?.push({
      id: r.id as string,
      code: r.code as string,
      name: r.name as string,
      type: r.type as FieldTypeName,
      required: dialect.decodeBoolean(r.required),
      options: dialect.decodeJson(r.options) as Record<string, unknown>,
    });
  }
  return byTable;
}

/**
 * Resolves table references to definitions. A reference is answered from the memo until the
 * metadata changes (MetadataCache); then the table's version is read again (one indexed row), and
 * its fields only when that version moved. So a definition keeps its identity while its table is
 * unchanged: RowStore keys its compiled statements on it.
 */
export class TableCatalog {
  private readonly cache = new Map<string, TableDef>();
  private readonly dialect: Dialect;
  /** Answers by reference while no metadata changed: no lookup at all. */
  private readonly memo: MetadataCache<TableDef>;

  constructor(database: Database) {
    this.dialect = database.dialect;
    this.memo = new MetadataCache(database);
  }

  /** The table named by id or code, or undefined; answered at once (no promise) when the memo holds it. */
  find(db: Db, idOrCode: string): TableDef | undefined | Promise<TableDef | undefined> {
    return this.memo.peek(db, idOrCode) ?? this.findLoading(db, idOrCode);
  }

  private async findLoading(db: Db, idOrCode: string): Promise<TableDef | undefined> {
    // What can be neither an id nor a code names no table; PostgreSQL must not see it (U+0000 fails there).
    if (!isTableRef(idOrCode)) return undefined;
    return this.memo.get(db, idOrCode, () => this.lookup(db, idOrCode));
  }

  private async lookup(db: Db, idOrCode: string): Promise<TableDef | undefined> {
    const byId = isUuid(idOrCode);
    const lookup = cachedTemplate(db, byId ? 'table-by-id' : 'table-by-code', (arg) =>
      db.selectFrom('rh_tables').select(['id', 'code', 'name', 'version']).where(byId ? 'id' : 'code', '=', arg(0)),
    );
    const [row] = (await lookup.run(db, [byId ? idOrCode.toLowerCase() : idOrCode])).rows;
    if (!row) return undefined;
    const version = Number(row.version);
    const cached = this.cache.get(row.id as string);
    if (cached && cached.version === version) return cached;
    const fields = (await loadFields(db, this.dialect, [row.id as string])).get(row.id as string) ?? [];
    const def: TableDef = {
      id: row.id as string,
      code: row.code as string | null,
      name: row.name as string,
      version,
      physical: physicalTable(row.id as string),
      fields,
      fieldsByCode: new Map(fields.map((f) => [f.code, f])),
    };
    this.cache.set(def.id, def);
    return def;
  }
}
