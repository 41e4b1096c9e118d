import { randomUUID } from 'node:crypto';
import type { Dialect } from './dialect.ts';
import type { Meta, MetaDb } from './meta-schema.ts';

/**
 * rh_files: one row per file id issued by file-upload-url, through its life:
 * issued → uploaded (bytes under objectKey) → attached (fieldId set) → released (a committed change
 * let go of it) → claimed (a deleter is removing its bytes) → gone. An upload never attached is
 * claimed by the sweeper once older than the TTL. Claims are what make several deleters (instances,
 * the sweeper and the after-commit purge) delete each file once: a row is claimed by one of them only.
 */
export type FileRow = Meta['rh_files'];

/** What a claimed file leaves to delete. */
export interface ClaimedFile {
  id: string;
  tableId: string;
  objectKey: string | null;
}

/** A claim older than this is taken to belong to a deleter that died: another may claim the file. */
const CLAIM_TIMEOUT_MS = 10 * 60_000;
/** Files claimed per statement; a sweep runs claims until none is left. */
const CLAIM_BATCH = 200;

export class FileStore {
  constructor(private readonly dialect: Dialect) {}

  /** New file ids for a row of a table (the row need not exist yet). */
  async issue(db: MetaDb, tableId: string, rowId: string, count: number, now: string): Promise<string[]> {
    const ids = Array.from({ length: count }, () => randomUUID());
    await db.insertInto('rh_files').values(ids.map((id) => ({ id, tableId, rowId, issuedAt: now }))).execute();
    return ids;
  }

  async find(db: MetaDb, id: string): Promise<FileRow | undefined> {
    return db.selectFrom('rh_files').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** The files, locked until the transaction ends where the database locks rows (PostgreSQL). */
  async lock(tx: MetaDb, ids: string[]): Promise<Map<string, FileRow>> {
    if (ids.length === 0) return new Map();
    let q = tx.selectFrom('rh_files').selectAll().where('id', 'in', ids).orderBy('id');
    if (this.dialect.lockRows) q = q.forUpdate();
    return new Map((await q.execute()).map((f) => [f.id, f]));
  }

  /**
   * Records bytes that arrived for a file still open to uploads (issued, not attached, released
   * or claimed): answers the key of the bytes they replace (null for a first upload), or the
   * file as it stands when it is no longer open (the caller then discards the new bytes).
   */
  async recordUpload(tx: MetaDb, id: string, upload: { objectKey: string; size: number; mimeType: string }, now: string): Promise<{ replaced: string | null } | { closed: FileRow | undefined }> {
    const [file] = [...(await this.lock(tx, [id])).values()];
    if (!file || file.fieldId !== null || file.releasedAt !== null || file.claimedAt !== null) return { closed: file };
    await tx.updateTable('rh_files').set({ ...upload, uploadedAt: now }).where('id', '=', id).execute();
    return { replaced: file.objectKey };
  }

  /** Attaches the file to a field of its row, and records what attaching learnt of its bytes (on S3). */
  async attach(tx: MetaDb, id: string, fieldId: string, bytes?: { objectKey: string; size: number; mimeType: string | null; uploadedAt: string }): Promise<void> {
    await tx.updateTable('rh_files').set({ fieldId, ...bytes }).where('id', '=', id).execute();
  }

  /**
   * Lets go of the files attached to these fields of a row, except those it keeps (the values it
   * is being written with): the field was cleared or given another file.
   */
  async releaseReplaced(tx: MetaDb, tableId: string, rowId: string, fieldIds: string[], keep: string[], now: string): Promise<number> {
    if (fieldIds.length === 0) return 0;
    let q = tx
      .updateTable('rh_files')
      .set({ releasedAt: now })
      .where('tableId', '=', tableId)
      .where('rowId', '=', rowId)
      .where('fieldId', 'in', fieldIds)
      .where('releasedAt', 'is', null);
    if (keep.length > 0) q = q.where('id', 'not in', keep);
    return Number((await q.executeTakeFirst()).numUpdatedRows);
  }

  /** Lets go of the files attached to rows being deleted. */
  async releaseRows(tx: MetaDb, tableId: string, rowIds: string[], now: string): Promise<number> {
    let n = 0;
    for (let i = 0; i < rowIds.length; i += 500) {
      const r = await tx
        .updateTable('rh_files')
        .set({ releasedAt: now })
        .where('tableId', '=', tableId)
        .where('rowId', 'in', rowIds.slice(i, i + 500))
        .where('fieldId', 'is not', null)
        .where('releasedAt', 'is', null)
        .executeTakeFirst();
      n += Number(r.numUpdatedRows);
    }
    return n;
  }

  /** Lets go of every file of a table (deleted), or of some of its fields (removed), attached or not. */
  async releaseTable(tx: MetaDb, tableId: string, now: string, fieldIds?: string[]): Promise<number> {
    if (fieldIds?.length === 0) return 0;
    let q = tx.updateTable('rh_files').set({ releasedAt: now }).where('tableId', '=', tableId).where('releasedAt', 'is', null);
    if (fieldIds) q = q.where('fieldId', 'in', fieldIds);
    return Number((await q.executeTakeFirst()).numUpdatedRows);
  }

  /**
   * Claims files whose bytes are to go: released ones, and with `unattachedBefore` also uploads
   * never attached that were issued before then. Each file is claimed by one caller only, however
   * many claim at once: on PostgreSQL the rows are locked as they are picked (others skip them),
   * and an attach that locked a file first makes it no longer match; SQLite writes one at a time.
   */
  async claim(db: MetaDb, now: Date, unattachedBefore?: string): Promise<ClaimedFile[]> {
    const stale = new Date(now.getTime() - CLAIM_TIMEOUT_MS).toISOString();
    const picked = db
      .selectFrom('rh_files')
      .select('id')
      .where((eb) =>
        eb.and([
          eb.or([eb('claimedAt', 'is', null), eb('claimedAt', '<', stale)]),
          unattachedBefore === undefined
            ? eb('releasedAt', 'is not', null)
            : eb.or([eb('releasedAt', 'is not', null), eb.and([eb('fieldId', 'is', null), eb('issuedAt', '<', unattachedBefore)])]),
        ]),
      )
      .limit(CLAIM_BATCH);
    const ids = this.dialect.lockRows ? picked.forUpdate().skipLocked() : picked;
    return db
      .updateTable('rh_files')
      .set({ claimedAt: now.toISOString() })
      .where('id', 'in', ids)
      .returning(['id', 'tableId', 'objectKey'])
      .execute();
  }

  /** Forgets files whose bytes are gone. */
  async remove(db: MetaDb, ids: string[]): Promise<void> {
    for (let i = 0; i < ids.length; i += 500) await db.deleteFrom('rh_files').where('id', 'in', ids.slice(i, i + 500)).execute();
  }
}
