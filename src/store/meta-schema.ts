import type { Kysely } from 'kysely';
import type { FieldTypeName } from '../domain/field-types/field-type.ts';

/**
 * The metadata tables as migrations.ts leaves them, for the query builder. User tables
 * (rows_<hex>) exist only at run time: they go through the untyped `Db` (database.ts).
 *
 * Timestamps are ISO 8601 text both ways (SQLite stores text; the pg type parser gives timestamptz
 * back as ISO text). Integers are numbers (pg's INT8 parser, database.ts).
 */

/** A boolean column as the driver gives and takes it: 0/1 on SQLite, a boolean on PostgreSQL. Through the dialect's encodeBoolean/decodeBoolean. */
export type StoredBoolean = unknown;
/** A JSON column: text on SQLite, jsonb on PostgreSQL. Through the dialect's encodeJson/decodeJson. */
export type StoredJson = unknown;

/** id plus the audit columns every metadata item carries. */
export interface ItemColumns {
  id: string;
  createdAt: string;
  updatedAt: string;
  createdBy: string | null;
  updatedBy: string | null;
}

export interface Meta {
  rh_settings: { key: string; value: string };
  rh_members: ItemColumns & { name: string; email: string | null };
  rh_api_keys: ItemColumns & {
    name: string;
    memberId: string;
    prefix: string;
    keyHash: string;
    expiresAt: string | null;
    lastUsedAt: string | null;
    revokedAt: string | null;
    /** JSON arrays (CONTRACT §12): scopes, and table ids or "*". */
    scopes: StoredJson;
    tables: StoredJson;
    /** JSON {requests, perSeconds}, or null: the default (ROWHOUSE_RATE_LIMIT). */
    rateLimit: StoredJson | null;
  };
  rh_environment_variables: ItemColumns & { name: string; value: string; description: string | null };
  rh_flows: ItemColumns & { name: string; description: string | null; enabled: StoredBoolean; definition: StoredJson; secret: string | null };
  /** How far an enabled flow has read its table's change log (events/delivery-store.ts). */
  rh_flow_cursors: { flowId: string; tableId: string; sequence: number };
  /** One change a flow is to deliver, and how its delivery goes. `change` is the change's JSON text. */
  rh_flow_deliveries: ItemColumns & {
    flowId: string;
    eventId: string;
    tableId: string;
    sequence: number;
    type: 'create' | 'update' | 'delete';
    change: string;
    status: 'pending' | 'succeeded' | 'failed';
    attempts: number;
    lastResponseStatus: number | null;
    lastError: string | null;
    nextAttemptAt: string | null;
    leaseUntil: string | null;
  };
  rh_tables: ItemColumns & { code: string | null; name: string; description: string | null; version: number };
  rh_fields: ItemColumns & {
    tableId: string;
    position: number;
    code: string;
    name: string;
    /** Written only from the field-type registry's names (the tables resource validates them). */
    type: FieldTypeName;
    required: StoredBoolean;
    options: StoredJson;
  };
  rh_migrations: { version: number; name: string; appliedAt: string };
  /** The answer to a request with an Idempotency-Key, per API key (store/idempotency-store.ts). */
  rh_idempotency: {
    /** idempotency-key-hash.ts: the 64-bit hash of keyId and key the record is found by (unique). */
    keyHash: bigint;
    keyId: string;
    key: string;
    method: string;
    path: string;
    bodyHash: string;
    status: number;
    contentType: string | null;
    body: string | null;
    createdAt: string;
    expiresAt: string;
  };
  /** Every committed row change (change-log.ts). `row` and `changedFields` are JSON text. */
  rh_changes: {
    tableId: string;
    sequence: number;
    type: 'create' | 'update' | 'delete';
    rowId: string;
    row: string | null;
    changedFields: string | null;
    occurredAt: string;
    memberId: string | null;
  };
  /** Per table: the last sequence taken, and the last one retention has deleted. */
  rh_change_counters: { tableId: string; last: number; purgedThrough: number };
  /** An upload URL issued, and what became of it (files/files.ts). */
  rh_files: {
    id: string;
    tableId: string;
    rowId: string;
    issuedAt: string;
    /** When bytes last arrived (on S3: when attaching found the object), with their key, size and type. */
    uploadedAt: string | null;
    objectKey: string | null;
    size: number | null;
    mimeType: string | null;
    /** The field the file is attached to, in row rowId; null while unattached. */
    fieldId: string | null;
    /** When a committed change let go of the file (replaced, cleared, row, field or table deleted): its bytes are to go. */
    releasedAt: string | null;
    /** When a deleter (after a commit, or a sweeper) took the file to delete its bytes; no one else then may. */
    claimedAt: string | null;
  };
  /** SQLite only (migration 4): the counter its triggers bump on every metadata change. */
  rh_metadata_version: { id: number; n: number };
}

/** The query builder over the metadata tables. The same connection as `Db`, seen through their types. */
export type MetaDb = Kysely<Meta>;
