import { isTableRef, isUuid } from '../domain/codes.ts';
import type { TableDef } from '../domain/table.ts';
import { CompiledTable } from '../domain/compiled-table.ts';
import type { FieldDef } from '../domain/field-types/field-type.ts';
import type { ValueCodec } from '../domain/value-codec.ts';
import type { Database } from './database.ts';
import { MetadataCache } from './metadata-cache.ts';
import { isFileField } from '../domain/field-types/file.ts';
import type { IncomingLink } from '../domain/field-types/link.ts';
import type { MetaDb } from './meta-schema.ts';
import { cachedTemplate } from './query-template.ts';
import { physicalTable } from './user-tables.ts';



/** The fields of the given tables, in order, keyed by table id. */
export async function loadFields(db: MetaDb, codec: ValueCodec, tableIds: string[]): Promise<Map<string, FieldDef[]>> {
  const byTable = new Map<string, FieldDef[]>(tableIds.map((id) => [id, []]));
  if (tableIds.length === 0) return byTable;
  const rows = await db
    .selectFrom('rh_fields')
    .select(['id', 'tableId', 'code', 'name', 'type', 'required', 'options'])
    .where('tableId', 'in', tableIds)
    .orderBy('position')
    .execute();
  for (const { tableId, required, options, ...field } of rows) {
    byTable.get(tableId)?.push({
      ...field,
      required: codec.decodeBoolean(required),
      options: codec.decodeJson(options) as Record<string, unknown>,
    });
  }
  return byTable;
}

/** The link fields, of every table, whose target is the table `tableId`. */
export async function loadIncomingLinks(db: MetaDb, codec: ValueCodec, tableId: string): Promise<IncomingLink[]> {
  const rows = await db.selectFrom('rh_fields').select(['id', 'tableId', 'code', 'name', 'type', 'required', 'options']).where('type', '=', 'link').execute();
  const out: IncomingLink[] = [];
  for (const { tableId: holder, required, options, ...field } of rows) {
    const decoded = codec.decodeJson(options) as Record<string, unknown>;
    if (decoded.table === tableId) out.push({ tableId: holder, field: { ...field, required: codec.decodeBoolean(required), options: decoded } });
  }
  return out;
}

/**
 * Resolves table references to definitions. A reference is answered from the memo until the
 * metadata changes (MetadataCache); then the table's version is read again (one indexed row), and
 * its fields only when that version moved. So a definition keeps its identity while its table is
 * unchanged, and a new version gets a new definition with its own CompiledTable, where every
 * layer keeps what it compiles from the version (RowStore its statements, the OpenAPI route its document).
 */
export class TableCatalog {
  private readonly cache = new Map<string, TableDef>();
  private readonly codec: ValueCodec;
  /** Answers by reference while no metadata changed: no lookup at all. */
  private readonly memo: MetadataCache<TableDef>;

  constructor(database: Database) {
    this.codec = database.dialect;
    this.memo = new MetadataCache(database);
  }

  /** The table named by id or code, or undefined; answered at once (no promise) when the memo holds it. */
  find(db: MetaDb, idOrCode: string): TableDef | undefined | Promise<TableDef | undefined> {
    return this.memo.peek(db, idOrCode) ?? this.findLoading(db, idOrCode);
  }

  /** The table named by id or code if the memo holds it now, else undefined (nothing is loaded). */
  peek(db: MetaDb, idOrCode: string): TableDef | undefined {
    return this.memo.peek(db, idOrCode);
  }

  /**
   * The table as the database holds it now, past the memo: for a request to plan again once its
   * table changed under it (another instance's change may not have reached the memo yet).
   */
  async findFresh(db: MetaDb, idOrCode: string): Promise<TableDef | undefined> {
    return isTableRef(idOrCode) ? this.lookup(db, idOrCode) : undefined;
  }

  private async findLoading(db: MetaDb, idOrCode: string): Promise<TableDef | undefined> {
    // What can be neither an id nor a code names no table; PostgreSQL must not see it (U+0000 fails there).
    if (!isTableRef(idOrCode)) return undefined;
    return this.memo.get(db, idOrCode, () => this.lookup(db, idOrCode));
  }

  private async lookup(db: MetaDb, idOrCode: string): Promise<TableDef | undefined> {
    const byId = isUuid(idOrCode);
    const lookup = cachedTemplate(db, byId ? 'table-by-id' : 'table-by-code', (arg) =>
      db.selectFrom('rh_tables').select(['id', 'code', 'name', 'version']).where(byId ? 'id' : 'code', '=', arg(0)),
    );
    const [row] = (await lookup.run(db, [byId ? idOrCode.toLowerCase() : idOrCode])).rows;
    if (!row) return undefined;
    const version = Number(row.version);
    const cached = this.cache.get(row.id);
    if (cached && cached.version === version) return cached;
    const fields = (await loadFields(db, this.codec, [row.id])).get(row.id) ?? [];
    const def: TableDef = {
      id: row.id,
      code: row.code,
      name: row.name,
      version,
      physical: physicalTable(row.id),
      fields,
      fieldsByCode: new Map(fields.map((f) => [f.code, f])),
      hasFiles: fields.some(isFileField),
      incoming: await loadIncomingLinks(db, this.codec, row.id),
      compiled: new CompiledTable(fields),
    };
    this.cache.set(def.id, def);
    return def;
  }
}
