import { randomBytes } from 'node:crypto';
import { type CreateTableBuilder, sql } from 'kysely';
import { changeNumbers } from '../domain/row-columns.ts';
import { keyHashOf } from './idempotency-key-hash.ts';
import type { Db } from './database.ts';
import type { ColumnKind, Dialect } from './dialect.ts';
import type { MetaDb } from './meta-schema.ts';

/**
 * Versioned migrations of the metadata tables. Each runs once, in its own transaction, in order;
 * applied versions are recorded in rh_migrations. Never edit a released migration: add one.
 */
interface Migration {
  version: number;
  name: string;
  /** Untyped: a migration is written against the tables of its time, which `Meta` (today's) need not be. */
  up(db: Db, dialect: Dialect): Promise<void>;
}

type ItemColumn = 'id' | 'createdAt' | 'updatedAt' | 'createdBy' | 'updatedBy';

// Text in byte order on both databases (COLLATE "C" on PostgreSQL): sorts and comparisons agree.
const type = (dialect: Dialect, kind: ColumnKind) => sql.raw(dialect.columnType(kind));

/** A kept Idempotency-Key answer's columns (rh_idempotency: migration 16, and 20, which adds its key's hash). */
function keptAnswerColumns<T extends string, C extends string>(t: CreateTableBuilder<T, C>, dialect: Dialect): CreateTableBuilder<T, C | string> {
  return t
    .addColumn('keyId', type(dialect, 'text'), (c) => c.notNull())
    .addColumn('key', type(dialect, 'text'), (c) => c.notNull())
    .addColumn('method', type(dialect, 'text'), (c) => c.notNull())
    .addColumn('path', type(dialect, 'text'), (c) => c.notNull())
    .addColumn('bodyHash', type(dialect, 'text'), (c) => c.notNull())
    .addColumn('status', type(dialect, 'integer'), (c) => c.notNull())
    .addColumn('contentType', type(dialect, 'text'))
    .addColumn('body', type(dialect, 'text'))
    .addColumn('createdAt', type(dialect, 'timestamp'), (c) => c.notNull())
    .addColumn('expiresAt', type(dialect, 'timestamp'), (c) => c.notNull());
}

/** id plus the audit columns every metadata item carries. */
function withItemColumns<T extends string>(t: CreateTableBuilder<T>, dialect: Dialect): CreateTableBuilder<T, ItemColumn> {
  const ts = sql.raw(dialect.columnType('timestamp'));
  return t
    .addColumn('id', type(dialect, 'text'), (c) => c.primaryKey())
    .addColumn('createdAt', ts, (c) => c.notNull())
    .addColumn('updatedAt', ts, (c) => c.notNull())
    .addColumn('createdBy', type(dialect, 'text'))
    .addColumn('updatedBy', type(dialect, 'text'));
}

const migrations: Migration[] = [
  {
    version: 1,
    name: 'metadata tables',
    async up(db, dialect) {
      await db.schema
        .createTable('rh_settings')
        .addColumn('key', type(dialect, 'text'), (c) => c.primaryKey())
        .addColumn('value', type(dialect, 'text'), (c) => c.notNull())
        .execute();

      await withItemColumns(db.schema.createTable('rh_members'), dialect)
        .addColumn('name', type(dialect, 'text'), (c) => c.notNull())
        .addColumn('email', type(dialect, 'text'), (c) => c.unique())
        .execute();

      await withItemColumns(db.schema.createTable('rh_api_keys'), dialect)
        .addColumn('name', type(dialect, 'text'), (c) => c.notNull())
        .addColumn('memberId', type(dialect, 'text'), (c) => c.notNull().references('rh_members.id'))
        .addColumn('prefix', type(dialect, 'text'), (c) => c.notNull())
        .addColumn('keyHash', type(dialect, 'text'), (c) => c.notNull().unique())
        .addColumn('expiresAt', type(dialect, 'timestamp'))
        .addColumn('lastUsedAt', type(dialect, 'timestamp'))
        .addColumn('revokedAt', type(dialect, 'timestamp'))
        .execute();
      await db.schema.createIndex('rh_api_keys_member').on('rh_api_keys').column('memberId').execute();

      await withItemColumns(db.schema.createTable('rh_environment_variables'), dialect)
        .addColumn('name', type(dialect, 'text'), (c) => c.notNull().unique())
        .addColumn('value', type(dialect, 'text'), (c) => c.notNull())
        .addColumn('description', type(dialect, 'text'))
        .execute();

      await withItemColumns(db.schema.createTable('rh_flows'), dialect)
        .addColumn('name', type(dialect, 'text'), (c) => c.notNull())
        .addColumn('description', type(dialect, 'text'))
        .addColumn('enabled', type(dialect, 'boolean'), (c) => c.notNull())
        .addColumn('definition', type(dialect, 'json'), (c) => c.notNull())
        .execute();

      await withItemColumns(db.schema.createTable('rh_tables'), dialect)
        .addColumn('code', type(dialect, 'text'), (c) => c.unique())
        .addColumn('name', type(dialect, 'text'), (c) => c.notNull())
        .addColumn('description', type(dialect, 'text'))
        // Bumped on every change, so each instance can tell that its cached definition is stale.
        .addColumn('version', type(dialect, 'integer'), (c) => c.notNull())
        .execute();

      await withItemColumns(db.schema.createTable('rh_fields'), dialect)
        .addColumn('tableId', type(dialect, 'text'), (c) => c.notNull().references('rh_tables.id').onDelete('cascade'))
        .addColumn('position', type(dialect, 'integer'), (c) => c.notNull())
        .addColumn('code', type(dialect, 'text'), (c) => c.notNull())
        .addColumn('name', type(dialect, 'text'), (c) => c.notNull())
        .addColumn('type', type(dialect, 'text'), (c) => c.notNull())
        .addColumn('required', type(dialect, 'boolean'), (c) => c.notNull())
        .addColumn('options', type(dialect, 'json'), (c) => c.notNull())
        .addUniqueConstraint('rh_fields_table_code', ['tableId', 'code'])
        .execute();
    },
  },
  {
    version: 2,
    name: 'drop sampled planner statistics',
    async up(db, dialect) {
      // Earlier versions ran `PRAGMA optimize`, which analyses a sample of each index: a user table
      // loaded through the API could be planned from a sample that saw one status. Dropped, they
      // are taken again in full on start (statistics.ts). PostgreSQL's own statistics are sound.
      if (dialect.name !== 'sqlite') return;
      const analysed = await sql`select 1 from sqlite_schema where name = 'sqlite_stat1'`.execute(db);
      if (analysed.rows.length === 0) return;
      await sql`delete from sqlite_stat1 where tbl like 'rows!_%' escape '!'`.execute(db);
      const samples = await sql`select 1 from sqlite_schema where name = 'sqlite_stat4'`.execute(db);
      if (samples.rows.length > 0) await sql`delete from sqlite_stat4 where tbl like 'rows!_%' escape '!'`.execute(db);
    },
  },
  {
    version: 3,
    name: 'fields say whether they are indexed',
    async up(db, dialect) {
      // Until now every field of these types had an index; from now on a field has one when its
      // options say `indexed: true`. The fields made before keep theirs, and say so.
      const sortable = ['text', 'number', 'boolean', 'dateTime', 'date', 'time', 'yearMonth', 'select'];
      const fields = await db.selectFrom('rh_fields').select(['id', 'options']).where('type', 'in', sortable).execute();
      for (const f of fields) {
        const options = dialect.decodeJson(f.options) as Record<string, unknown>;
        if (options.indexed !== undefined) continue;
        await db.updateTable('rh_fields').set({ options: dialect.encodeJson({ ...options, indexed: true }) }).where('id', '=', f.id).execute();
      }
    },
  },
  {
    version: 4,
    name: 'metadata change signals',
    async up(db, dialect) {
      // Every change to what the key and table caches hold signals, whoever makes it (the API, the
      // CLI, another instance, a hand-written statement): see docs/decisions.md, "Metadata caches".
      // rh_api_keys signals on every column but lastUsedAt, which each request may write once a
      // minute; a migration adding a column to rh_api_keys must add it to that trigger.
      const watched = ['rh_members', 'rh_tables', 'rh_fields'];
      const keyColumns = ['id', 'createdAt', 'updatedAt', 'createdBy', 'updatedBy', 'name', 'memberId', 'prefix', 'keyHash', 'expiresAt', 'revokedAt']
        .map((c) => `"${c}"`)
        .join(', ');
      const run = (text: string) => sql.raw(text).execute(db);
      if (dialect.name === 'postgres') {
        // Delivered to every LISTENing session at commit, never for a rolled-back change.
        await run(`create function rh_metadata_changed() returns trigger language plpgsql as $$
          begin perform pg_notify('rowhouse_meta', tg_table_name); return null; end $$`);
        const notify = 'for each statement execute function rh_metadata_changed()';
        await run(`create trigger rh_api_keys_changed after insert or delete or truncate or update of ${keyColumns} on rh_api_keys ${notify}`);
        for (const t of watched) await run(`create trigger ${t}_changed after insert or update or delete or truncate on ${t} ${notify}`);
      } else {
        // One counter row, read by every request on the read connection (cheap, in-process).
        await run('create table rh_metadata_version (id integer primary key check (id = 1), n integer not null)');
        await run('insert into rh_metadata_version (id, n) values (1, 0)');
        const bump = 'begin update rh_metadata_version set n = n + 1 where id = 1; end';
        await run(`create trigger rh_api_keys_inserted after insert on rh_api_keys ${bump}`);
        await run(`create trigger rh_api_keys_updated after update of ${keyColumns} on rh_api_keys ${bump}`);
        await run(`create trigger rh_api_keys_deleted after delete on rh_api_keys ${bump}`);
        for (const t of watched) {
          for (const [event, done] of [['insert', 'inserted'], ['update', 'updated'], ['delete', 'deleted']]) {
            await run(`create trigger ${t}_${done} after ${event} on ${t} ${bump}`);
          }
        }
      }
    },
  },
  {
    version: 5,
    name: 'file uploads',
    async up(db, dialect) {
      // One row per upload URL issued (files.ts): the file's life from issue to deletion.
      const ts = type(dialect, 'timestamp');
      await db.schema
        .createTable('rh_files')
        .addColumn('id', type(dialect, 'text'), (c) => c.primaryKey())
        .addColumn('tableId', type(dialect, 'text'), (c) => c.notNull())
        .addColumn('rowId', type(dialect, 'text'), (c) => c.notNull())
        .addColumn('issuedAt', ts, (c) => c.notNull())
        .addColumn('uploadedAt', ts)
        .addColumn('objectKey', type(dialect, 'text'))
        .addColumn('size', type(dialect, 'integer'))
        .addColumn('mimeType', type(dialect, 'text'))
        .addColumn('fieldId', type(dialect, 'text'))
        .addColumn('releasedAt', ts)
        .addColumn('claimedAt', ts)
        .execute();
      await db.schema.createIndex('rh_files_table').on('rh_files').columns(['tableId', 'rowId']).execute();
      await db.schema.createIndex('rh_files_issued').on('rh_files').column('issuedAt').execute();
      await db.schema.createIndex('rh_files_released').on('rh_files').column('releasedAt').execute();
    },
  },
  {
    version: 6,
    name: 'change log',
    async up(db, dialect) {
      // change-log.ts: every committed row change, numbered per table in commit order.
      const text = type(dialect, 'text');
      await db.schema
        .createTable('rh_changes')
        .addColumn('tableId', text, (c) => c.notNull())
        .addColumn('sequence', type(dialect, 'integer'), (c) => c.notNull())
        .addColumn('type', text, (c) => c.notNull())
        .addColumn('rowId', text, (c) => c.notNull())
        .addColumn('row', text)
        .addColumn('changedFields', text)
        .addColumn('occurredAt', type(dialect, 'timestamp'), (c) => c.notNull())
        .addColumn('memberId', text)
        .addPrimaryKeyConstraint('rh_changes_key', ['tableId', 'sequence'])
        .execute();
      await db.schema.createIndex('rh_changes_occurred').on('rh_changes').column('occurredAt').execute();
      await db.schema
        .createTable('rh_change_counters')
        .addColumn('tableId', text, (c) => c.primaryKey())
        .addColumn('last', type(dialect, 'integer'), (c) => c.notNull())
        .addColumn('purgedThrough', type(dialect, 'integer'), (c) => c.notNull().defaultTo(0))
        .execute();
    },
  },
  {
    version: 7,
    name: 'flow deliveries',
    async up(db, dialect) {
      // events/: a flow's signing secret, how far it has read its table's change log, and one row
      // per change it is to deliver (created from the log in the transaction that moves the cursor).
      const text = type(dialect, 'text');
      const integer = type(dialect, 'integer');
      const ts = type(dialect, 'timestamp');
      await db.schema.alterTable('rh_flows').addColumn('secret', text).execute();
      // Flows made before deliveries existed get a secret no one has seen: recreate one to learn it.
      const old = await db.selectFrom('rh_flows').select('id').execute();
      for (const f of old) {
        await db.updateTable('rh_flows').set({ secret: `whsec_${randomBytes(32).toString('base64url')}` }).where('id', '=', f.id).execute();
      }
      await db.schema
        .createTable('rh_flow_cursors')
        .addColumn('flowId', text, (c) => c.primaryKey())
        .addColumn('tableId', text, (c) => c.notNull())
        .addColumn('sequence', integer, (c) => c.notNull())
        .execute();
      await withItemColumns(db.schema.createTable('rh_flow_deliveries'), dialect)
        .addColumn('flowId', text, (c) => c.notNull())
        .addColumn('eventId', text, (c) => c.notNull().unique())
        .addColumn('tableId', text, (c) => c.notNull())
        .addColumn('sequence', integer, (c) => c.notNull())
        .addColumn('type', text, (c) => c.notNull())
        // The change as the feed renders it, kept here so retention of the log never loses a delivery's body.
        .addColumn('change', text, (c) => c.notNull())
        .addColumn('status', text, (c) => c.notNull())
        .addColumn('attempts', integer, (c) => c.notNull())
        .addColumn('lastResponseStatus', integer)
        .addColumn('lastError', text)
        .addColumn('nextAttemptAt', ts)
        // While a sender holds it: another may take it once this has passed (the sender died).
        .addColumn('leaseUntil', ts)
        .addUniqueConstraint('rh_flow_deliveries_change', ['flowId', 'tableId', 'sequence'])
        .execute();
      await db.schema.createIndex('rh_flow_deliveries_due').on('rh_flow_deliveries').columns(['status', 'nextAttemptAt']).execute();
      await db.schema.createIndex('rh_flow_deliveries_flow').on('rh_flow_deliveries').columns(['flowId', 'status', 'sequence']).execute();
    },
  },
  {
    version: 8,
    name: 'field indexes with nulls first',
    async up(db, dialect) {
      // user-tables.ts now makes them so on PostgreSQL (SQLite orders nulls first anyway): the
      // indexes made before are made again. Their definitions end `(<key>, id)`.
      if (dialect.nullsFirstByDefault('asc')) return;
      const { rows } = await sql<{ indexname: string; indexdef: string }>`
        select indexname, indexdef from pg_indexes
        where schemaname = current_schema() and tablename like 'rows!_%' escape '!' and indexname ~ '^i_[0-9a-f]{32}$'`.execute(db);
      for (const { indexname, indexdef } of rows) {
        if (/ NULLS FIRST, id\)$/.test(indexdef)) continue;
        if (!/, id\)$/.test(indexdef)) throw new Error(`migration 8: index ${indexname} is not (key, id): ${indexdef}`);
        await sql`drop index ${sql.id(indexname)}`.execute(db);
        await sql.raw(indexdef.replace(/, id\)$/, ' NULLS FIRST, id)')).execute(db);
      }
    },
  },
  {
    version: 9,
    name: 'change log without an index on time',
    async up(db) {
      // Retention finds old entries by number (ChangeLog.purge): every write paid for this index.
      await db.schema.dropIndex('rh_changes_occurred').ifExists().execute();
    },
  },
  {
    version: 10,
    name: 'change log clustered by its key (SQLite)',
    async up(db, dialect) {
      // On SQLite an entry went into two B-trees, the table's rowid one and its primary key's;
      // WITHOUT ROWID keeps entries in the key's alone. (PostgreSQL's heap has no such twin.)
      if (dialect.name !== 'sqlite') return;
      await sql`create table rh_changes_next (
        "tableId" text not null, "sequence" integer not null, "type" text not null, "rowId" text not null,
        "row" text, "changedFields" text, "occurredAt" text not null, "memberId" text,
        constraint rh_changes_key primary key ("tableId", "sequence")) without rowid`.execute(db);
      await sql`insert into rh_changes_next select "tableId", "sequence", "type", "rowId", "row", "changedFields", "occurredAt", "memberId" from rh_changes`.execute(db);
      await sql`drop table rh_changes`.execute(db);
      await sql`alter table rh_changes_next rename to rh_changes`.execute(db);
    },
  },
  {
    version: 11,
    name: 'change numbers from a sequence per table (PostgreSQL)',
    async up(db, dialect) {
      // change-log.ts: each table's entries are numbered by a sequence of its own, not by a counter
      // row each writer of the table waited on. It goes on from the counter, so cursors held stay good.
      if (dialect.name !== 'postgres') return;
      const { rows } = await sql<{ id: string; last: string | null }>`
        select t.id, c."last" from rh_tables t left join rh_change_counters c on c."tableId" = t.id`.execute(db);
      for (const { id, last } of rows) {
        const { rows: made } = await sql<{ missing: boolean }>`select to_regclass(${changeNumbers(id)}) is null as missing`.execute(db);
        if (!made[0].missing) continue;
        await sql`create sequence ${sql.id(changeNumbers(id))} as bigint`.execute(db);
        if (Number(last ?? 0) > 0) await sql`select setval(${changeNumbers(id)}, ${Number(last)})`.execute(db);
      }
    },
  },
  {
    version: 15,
    name: 'scoped API keys and their rate limits',
    async up(db, dialect) {
      // CONTRACT §12: a key's scopes and tables; the keys made before keep full access.
      const json = type(dialect, 'json');
      await sql`alter table rh_api_keys add column "scopes" ${json} not null default '["*"]'`.execute(db);
      await sql`alter table rh_api_keys add column "tables" ${json} not null default '["*"]'`.execute(db);
      await sql`alter table rh_api_keys add column "rateLimit" ${json}`.execute(db);
      // The key cache must hear of changes to them too (migration 4).
      const keyColumns = ['id', 'createdAt', 'updatedAt', 'createdBy', 'updatedBy', 'name', 'memberId', 'prefix', 'keyHash', 'expiresAt', 'revokedAt', 'scopes', 'tables', 'rateLimit']
        .map((c) => `"${c}"`)
        .join(', ');
      const run = (text: string) => sql.raw(text).execute(db);
      if (dialect.name === 'postgres') {
        await run('drop trigger rh_api_keys_changed on rh_api_keys');
        await run(`create trigger rh_api_keys_changed after insert or delete or truncate or update of ${keyColumns} on rh_api_keys for each statement execute function rh_metadata_changed()`);
      } else {
        await run('drop trigger rh_api_keys_updated');
        await run(`create trigger rh_api_keys_updated after update of ${keyColumns} on rh_api_keys begin update rh_metadata_version set n = n + 1 where id = 1; end`);
      }
    },
  },
  {
    version: 16,
    name: 'idempotency keys',
    async up(db, dialect) {
      // CONTRACT §12: the answer to a request with an Idempotency-Key, kept with the writes it answers.
      await keptAnswerColumns(db.schema.createTable('rh_idempotency'), dialect).addPrimaryKeyConstraint('rh_idempotency_key', ['keyId', 'key']).execute();
      await db.schema.createIndex('rh_idempotency_expires').on('rh_idempotency').column('expiresAt').execute();
    },
  },
  {
    version: 18,
    name: 'change log by row',
    async up(db) {
      // store/change-history.ts: a row's history, newest first, and a change stream's filter
      // finding a row's state before an update or delete (its entry before), without a scan of the
      // table's log. docs/decisions.md "Change streams and row history".
      await db.schema.createIndex('rh_changes_row').on('rh_changes').columns(['tableId', 'rowId', 'sequence']).execute();
    },
  },
  {
    version: 19,
    name: 'kept answers swept in insertion order (SQLite)',
    async up(db, dialect) {
      // Every idempotent create on SQLite also went into this index, for the sweep alone; the sweep
      // walks the table in rowid order instead (sqlite/idempotency-sweep.ts). PostgreSQL's uses it.
      if (dialect.name !== 'sqlite') return;
      await db.schema.dropIndex('rh_idempotency_expires').ifExists().execute();
    },
  },
  {
    version: 20,
    name: 'kept answers found by a hash of their key',
    async up(db, dialect) {
      // A keyed create inserted its record into the (keyId, key) primary key, text entries of 60
      // bytes and more at random places: as records accumulated, each insert touched a page of its
      // own (docs/decisions.md "Kept answers found by a hash of their key"). Now a unique index on
      // an 8-byte hash of the two (idempotency-key-hash.ts); lookups compare keyId and key too. The
      // table is made again (SQLite cannot drop a primary key), its records copied with their hash.
      await keptAnswerColumns(db.schema.createTable('rh_idempotency_hashed').addColumn('keyHash', type(dialect, 'integer'), (c) => c.notNull()), dialect).execute();
      // In batches along the old primary key (a day of records may be many).
      for (let after: { keyId: string; key: string } | undefined; ; ) {
        const from = after;
        const rows = await db
          .selectFrom('rh_idempotency')
          .selectAll()
          .$if(from !== undefined, (q) => q.where((eb) => eb.or([eb('keyId', '>', from?.keyId), eb.and([eb('keyId', '=', from?.keyId), eb('key', '>', from?.key)])])))
          .orderBy('keyId')
          .orderBy('key')
          .limit(500)
          .execute();
        if (rows.length === 0) break;
        await db
          .insertInto('rh_idempotency_hashed')
          .values(rows.map((r) => ({ ...r, keyHash: keyHashOf(r.keyId, r.key) })))
          .execute();
        after = rows[rows.length - 1] as { keyId: string; key: string };
      }
      await db.schema.dropTable('rh_idempotency').execute();
      await db.schema.alterTable('rh_idempotency_hashed').renameTo('rh_idempotency').execute();
      await db.schema.createIndex('rh_idempotency_hash').unique().on('rh_idempotency').column('keyHash').execute();
      // PostgreSQL's sweep deletes by expiry through this index; SQLite's walks the table (migration 19).
      if (dialect.name !== 'sqlite') await db.schema.createIndex('rh_idempotency_expires').on('rh_idempotency').column('expiresAt').execute();
    },
  },
];

export const LATEST_VERSION = migrations[migrations.length - 1].version;
/** Every migration's version, in order (branches take their numbers ahead: there may be gaps). */
export const MIGRATION_VERSIONS: readonly number[] = migrations.map((m) => m.version);

/** Applies every pending migration; safe to run from several instances at once. */
export async function migrate(db: MetaDb, dialect: Dialect): Promise<number[]> {
  // Under the migrations' lock too: two instances starting together on an empty PostgreSQL would
  // both create the table, and one would fail (a duplicate row in pg_type) and exit.
  await db.transaction().execute(async (tx) => {
    await dialect.lockMigrations(tx);
    await tx.schema
      .createTable('rh_migrations')
      .ifNotExists()
      .addColumn('version', 'integer', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('appliedAt', 'text', (c) => c.notNull())
      .execute();
  });
  const applied: number[] = [];
  for (const m of migrations) {
    const done = await db.transaction().execute(async (tx) => {
      // Instances starting together take turns; the second finds the work done.
      await dialect.lockMigrations(tx);
      const row = await tx.selectFrom('rh_migrations').select('version').where('version', '=', m.version).executeTakeFirst();
      if (row) return false;
      await m.up(tx, dialect);
      await tx
        .insertInto('rh_migrations')
        .values({ version: m.version, name: m.name, appliedAt: new Date().toISOString() })
        .execute();
      return true;
    });
    if (done) applied.push(m.version);
  }
  return applied;
}
