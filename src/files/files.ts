import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { FieldDef } from '../domain/field-types/field-type.ts';
import type { FileLinks, StoredFile } from '../domain/file-value.ts';
import { isFileField } from '../domain/field-types/file.ts';
import { ServiceError, badRequest, notFound } from '../domain/errors.ts';
import { type Database, type Db, afterCommit, inTransaction } from '../store/database.ts';
import { type FileRow, FileStore } from '../store/file-store.ts';
import type { MetaDb } from '../store/meta-schema.ts';
import { fieldColumn } from '../domain/row-columns.ts';
import { attachment } from './disposition.ts';
import { type FileUrlTarget, URL_LIFETIME_SECONDS, checkSignature, signedPath } from './signed-urls.ts';
import { type FileStorage, FileTooLarge } from './storage.ts';
import type { TableDef } from '../domain/table.ts';
import type { RawRow } from '../domain/row.ts';

/**
 * File attachments (CONTRACT §8): upload URLs, uploads, attaching to row fields inside the write
 * that names them, signed downloads, and deleting bytes once nothing committed needs them.
 * Bytes live in a FileStorage (local disk or S3); what became of each file id lives in rh_files.
 */

export interface FilesOptions {
  secret: string;
  publicUrl: string;
  maxFileBytes: number;
  uploadTtlSeconds: number;
  /** Reports work in the background that failed (deleting bytes): it has no request to answer. */
  warn?: (message: string) => void;
}

const forbidden = (message: string) => new ServiceError('bad_signature', message);
const nowSeconds = () => Math.floor(Date.now() / 1000);

/** Where the bytes of one upload go: a key per upload, so new bytes never overwrite ones attached meanwhile. */
const uploadKey = (file: { tableId: string; id: string }) => `t/${file.tableId}/${file.id}/${randomBytes(8).toString('hex')}`;
/** On S3 the bucket takes the upload itself, at the one key its presigned URL names. */
const bucketKey = (file: { tableId: string; id: string }) => `t/${file.tableId}/${file.id}/upload`;
/**
 * On S3, attaching copies the upload here: the upload URL stays valid for its hour, and a PUT to it
 * after attaching must not change the bytes of an attached file (the bucket cannot be told to refuse it).
 */
const attachedKey = (file: { tableId: string; id: string }) => `t/${file.tableId}/${file.id}/attached`;

export class Files {
  private readonly store: FileStore;
  private purging: Promise<void> | null = null;
  private purgeAgain = false;

  constructor(
    private readonly database: Database,
    readonly storage: FileStorage,
    private readonly options: FilesOptions,
  ) {
    this.store = new FileStore(database.dialect);
  }

  private get meta(): MetaDb {
    return this.database.db;
  }

  /** POST /rows/{rowId}/file-upload-url: `count` new file ids for the row, each with its upload URL. */
  async uploadUrls(table: TableDef, rowId: string, count: number): Promise<{ id: string; url: string }[]> {
    const ids = await this.store.issue(this.meta, table.id, rowId, count, new Date().toISOString());
    const expires = nowSeconds() + URL_LIFETIME_SECONDS;
    return Promise.all(
      ids.map(async (id) => ({
        id,
        url: this.storage.uploadUrl
          ? await this.storage.uploadUrl(bucketKey({ tableId: table.id, id }), URL_LIFETIME_SECONDS)
          : this.options.publicUrl + signedPath(this.options.secret, 'upload', { tableId: table.id, rowId, fileId: id }, expires),
      })),
    );
  }

  /** A file a signed URL names, once its signature holds; a 403 otherwise, and for a file that is gone. */
  private async signedFile(purpose: 'upload' | 'download', target: FileUrlTarget, query: Record<string, unknown>): Promise<FileRow> {
    const problem = checkSignature(this.options.secret, purpose, target, query, nowSeconds());
    if (problem === 'expired') throw forbidden(`This ${purpose} URL has expired; ask for a new one`);
    if (problem) throw forbidden(`This ${purpose} URL is not valid: use it exactly as it was given`);
    const file = await this.store.find(this.meta, target.fileId);
    if (!file || file.tableId !== target.tableId || file.rowId !== target.rowId || file.releasedAt !== null || file.claimedAt !== null) {
      throw notFound(`file ${target.fileId} no longer exists`);
    }
    return file;
  }

  /** PUT of an upload URL: streams the body to storage, within the size limit. */
  async receive(target: FileUrlTarget, query: Record<string, unknown>, contentType: string | undefined, body: Readable, declaredBytes: number | undefined): Promise<{ size: number }> {
    const file = await this.signedFile('upload', target, query);
    if (file.fieldId !== null) throw new ServiceError('file_attached', `file ${file.id} is attached to a row: its bytes cannot change`);
    if (!contentType) throw badRequest('Content-Type is required: the type of the file, such as application/pdf');
    const limit = this.options.maxFileBytes;
    if (declaredBytes !== undefined && declaredBytes > limit) throw tooLarge(limit);
    const key = uploadKey(file);
    let size: number;
    try {
      size = await this.storage.write(key, body, limit);
    } catch (err) {
      if (err instanceof FileTooLarge) throw tooLarge(limit);
      throw err;
    }
    const outcome = await inTransaction(this.database, (tx) =>
      this.store.recordUpload(tx, file.id, { objectKey: key, size, mimeType: contentType }, new Date().toISOString()),
    );
    if ('closed' in outcome) {
      await this.storage.delete(key);
      if (outcome.closed?.fieldId) throw new ServiceError('file_attached', `file ${file.id} is attached to a row: its bytes cannot change`);
      throw notFound(`file ${file.id} no longer exists`);
    }
    if (outcome.replaced) await this.storage.delete(outcome.replaced);
    return { size };
  }

  /** GET of a download URL: the bytes, their type, and the name to save them as. */
  async send(target: FileUrlTarget, query: Record<string, unknown>): Promise<{ body: Readable; size: number; contentType: string; disposition: string }> {
    const file = await this.signedFile('download', target, query);
    const bytes = file.fieldId !== null && file.objectKey ? await this.storage.read(file.objectKey) : null;
    if (!bytes) throw notFound(`file ${file.id} no longer exists`);
    return { ...bytes, contentType: file.mimeType ?? 'application/octet-stream', disposition: attachment(target.name ?? 'file') };
  }

  /**
   * Within a write of one row: checks every file value it writes against rh_files, attaches the
   * new ones to their fields, and lets go of the files those fields held before. The values are
   * completed with the file's type and size, as the row stores them. Errors name `values.<code>`.
   */
  async beforeWrite(tx: Db, table: TableDef, rowId: string, values: Map<FieldDef, unknown>, now: string): Promise<void> {
    const written = [...values].filter(([f]) => isFileField(f));
    if (written.length === 0) return;
    const refs = written.filter((w): w is [FieldDef, StoredFile] => w[1] !== null);
    const files = await this.store.lock(tx, refs.map(([, v]) => v.id));
    const seen = new Map<string, string>();
    for (const [field, value] of refs) {
      const where = `values.${field.code}`;
      const problem = (message: string) => badRequest(`Invalid row: ${where} ${message}`, [{ path: where, message }]);
      const file = files.get(value.id);
      if (!file || file.tableId !== table.id || file.rowId !== rowId) throw problem(`names file ${value.id}, which was not issued for this row (file-upload-url of this table and row)`);
      if (file.releasedAt !== null || file.claimedAt !== null) throw problem(`names file ${value.id}, which has been deleted`);
      if (seen.has(value.id)) throw problem(`names file ${value.id}, which ${seen.get(value.id)} names too: a file belongs to one field`);
      seen.set(value.id, where);
      if (file.fieldId !== null && file.fieldId !== field.id) throw problem(`names file ${value.id}, which is attached to another field`);
      let bytes = file.uploadedAt === null ? null : { size: Number(file.size), mimeType: file.mimeType ?? 'application/octet-stream' };
      if (file.fieldId === null) {
        const found = file.uploadedAt === null && this.storage.presigns ? await this.checkBucket(file, where) : undefined;
        if (found) bytes = { size: found.size, mimeType: found.mimeType ?? 'application/octet-stream' };
        if (!bytes) throw problem(`names file ${value.id}, which has not been uploaded yet`);
        await this.store.attach(tx, file.id, field.id, found ?? undefined);
        // The upload's own object is no longer read (S3: it was copied); a rollback still needs it.
        if (found) afterCommit(tx, () => this.storage.delete(bucketKey(file)).catch((err) => this.options.warn?.(`deleting an attached upload: ${(err as Error).message}`)));
      }
      values.set(field, { id: value.id, name: value.name, mimeType: bytes?.mimeType, size: bytes?.size });
    }
    const keep = refs.map(([, v]) => v.id);
    const released = await this.store.releaseReplaced(tx, table.id, rowId, written.map(([f]) => f.id), keep, now);
    if (released > 0) afterCommit(tx, () => this.purgeSoon());
  }

  /** On S3 the upload went to the bucket: what it holds there, refused (and deleted) past the size limit. */
  private async checkBucket(file: FileRow, where: string): Promise<{ objectKey: string; size: number; mimeType: string | null; uploadedAt: string } | null> {
    const key = bucketKey(file);
    const stat = await this.storage.stat(key);
    if (!stat) return null;
    if (stat.size > this.options.maxFileBytes) {
      await this.storage.delete(key);
      const message = `names file ${file.id}, which is larger than the limit of ${this.options.maxFileBytes} bytes: it has been deleted`;
      throw badRequest(`Invalid row: ${where} ${message}`, [{ path: where, message }]);
    }
    await this.storage.copy?.(key, attachedKey(file));
    return { objectKey: attachedKey(file), size: stat.size, mimeType: stat.contentType, uploadedAt: new Date().toISOString() };
  }

  /** Within the write deleting rows: lets go of their files. */
  async beforeDelete(tx: Db, table: TableDef, rowIds: string[], now: string): Promise<void> {
    if (!table.fields.some(isFileField)) return;
    if ((await this.store.releaseRows(tx, table.id, rowIds, now)) > 0) afterCommit(tx, () => this.purgeSoon());
  }

  /** Within the write deleting a table, or some of its fields: lets go of their files. */
  async releaseTable(tx: Db, tableId: string, fieldIds?: string[]): Promise<void> {
    if ((await this.store.releaseTable(tx, tableId, new Date().toISOString(), fieldIds)) > 0) afterCommit(tx, () => this.purgeSoon());
  }

  /**
   * The download URLs of the file values in these rows, for rendering them. The service's own URLs
   * are signed as they are rendered; S3's presigned ones (asynchronous in the SDK) here, ahead.
   */
  async links(rows: Iterable<{ table: TableDef; row: RawRow }>): Promise<FileLinks> {
    const expires = nowSeconds() + URL_LIFETIME_SECONDS;
    const expiresAt = new Date(expires * 1000).toISOString();
    const { downloadUrl } = this.storage;
    if (!downloadUrl) {
      const { secret, publicUrl } = this.options;
      return (file, tableId, rowId) => ({ url: publicUrl + signedPath(secret, 'download', { tableId, rowId, fileId: file.id, name: file.name }, expires), expiresAt });
    }
    const presigned = new Map<string, string>();
    const fileFields = new Map<TableDef, FieldDef[]>();
    for (const { table, row } of rows) {
      let fields = fileFields.get(table);
      if (!fields) fileFields.set(table, (fields = table.fields.filter(isFileField)));
      for (const field of fields) {
        const raw = row[fieldColumn(field.id)];
        if (raw === null || raw === undefined) continue;
        const file = this.database.dialect.decodeJson(raw) as StoredFile;
        const disposition = attachment(file.name);
        const contentType = file.mimeType ?? 'application/octet-stream';
        presigned.set(file.id, await downloadUrl.call(this.storage, attachedKey({ tableId: table.id, id: file.id }), { contentType, disposition, expiresInSeconds: URL_LIFETIME_SECONDS }));
      }
    }
    return (file) => ({ url: presigned.get(file.id) ?? '', expiresAt });
  }

  /** Deletes the bytes of released files soon, once; a purge asked for while one runs runs again after it. */
  purgeSoon(): void {
    if (this.purging) {
      this.purgeAgain = true;
      return;
    }
    this.purging = (async () => {
      do {
        this.purgeAgain = false;
        await this.deleteClaimed(new Date());
      } while (this.purgeAgain);
    })()
      .catch((err) => this.options.warn?.(`deleting released files: ${(err as Error).message}`))
      .finally(() => {
        this.purging = null;
      });
  }

  /** Waits for a purge under way (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.purging) await this.purging;
  }

  /**
   * One sweep: deletes released files, and uploads never attached that were issued more than the
   * TTL ago. Safe to run on several instances at once. Answers the ids it deleted.
   */
  async sweep(now = new Date()): Promise<string[]> {
    return this.deleteClaimed(now, new Date(now.getTime() - this.options.uploadTtlSeconds * 1000).toISOString());
  }

  private async deleteClaimed(now: Date, unattachedBefore?: string): Promise<string[]> {
    const deleted: string[] = [];
    for (;;) {
      const claimed = await this.store.claim(this.meta, now, unattachedBefore);
      if (claimed.length === 0) return deleted;
      for (const file of claimed) {
        if (file.objectKey) await this.storage.delete(file.objectKey);
        // On S3 a PUT to the upload URL may have come after the last look, and an attach that
        // rolled back may have left its copy: those objects go too.
        if (this.storage.presigns) {
          await this.storage.delete(bucketKey(file));
          await this.storage.delete(attachedKey(file));
        }
      }
      await this.store.remove(this.meta, claimed.map((f) => f.id));
      deleted.push(...claimed.map((f) => f.id));
    }
  }

  async close(): Promise<void> {
    await this.settled();
    await this.storage.close();
  }
}

const tooLarge = (limit: number) => new ServiceError('payload_too_large', `The file is larger than the limit of ${limit} bytes (ROWHOUSE_MAX_FILE_BYTES)`);
