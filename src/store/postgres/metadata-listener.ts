import {
  AliasNode,
  ColumnNode,
  type CompiledQuery,
  type DatabaseConnection,
  DeleteQueryNode,
  type Dialect as KyselyDialect,
  type Driver,
  InsertQueryNode,
  type OperationNode,
  type QueryCompiler,
  TableNode,
  type TransactionSettings,
  UpdateQueryNode,
} from 'kysely';
import type pg from 'pg';
import { behindPooler } from './pooler.ts';

/**
 * How a PostgreSQL instance knows whether its metadata caches still hold (see MetadataCache):
 * a version that moves when the metadata may have changed, or is unknown while it cannot tell.
 */

/** The channel migration 4's triggers notify on. */
const CHANNEL = 'rowhouse_meta';
/** Also what an operator (or a test) finds the listening session by in pg_stat_activity. */
export const LISTENER_NAME = 'rowhouse-metadata-listener';
const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 5000;
const THROUGH_POOLER =
  'The metadata listener connects through a connection pooler, where LISTEN can miss notifications (PgBouncer in transaction mode): ' +
  'the metadata caches stay off, so every request reads keys and tables from the database. Set DATABASE_LISTEN_URL to a direct connection to PostgreSQL.';

/**
 * One LISTEN connection outside the pool, as PostgREST reloads its schema cache. Each notification
 * (another instance's change, the CLI's, this instance's own) moves the version. When the
 * connection drops the version is unknown at once, so the caches are bypassed, until it listens
 * again (with backoff); then the version moves, which empties them. Started on first use, so
 * a CLI command that never looks at a cache opens no such connection.
 */
export class MetadataListener {
  private version = 0;
  private client: pg.Client | undefined;
  private listening = false;
  private started = false;
  private closed = false;
  private failures = 0;
  private retry: NodeJS.Timeout | undefined;
  /** Channels also listened on over this connection (change-signals.ts), each with what hears it: a payload, or null when listening (re)starts. */
  private readonly channels = new Map<string, (payload: string | null) => void>();
  /** The last statement sent on the listening connection (inTurn). */
  private turn: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly driver: typeof pg,
    private readonly url: string,
  ) {}

  /** The version; undefined while not listening (a change could go unseen). */
  current(): number | undefined {
    if (!this.started && !this.closed) {
      this.started = true;
      void this.connect();
    }
    return this.listening ? this.version : undefined;
  }

  /** Also listens on `channel` (a plain identifier) over this connection, from now on; starts listening. */
  listen(channel: string, heard: (payload: string | null) => void): void {
    this.channels.set(channel, heard);
    if (this.listening && this.client) this.inTurn(this.client, `listen ${channel}`).catch(() => {});
    this.current();
  }

  /**
   * Sends a notification on `channel` over this connection (off the pool and the requests' path);
   * nothing while not listening (a listener is then looking on its own: change-signals.ts).
   */
  async notify(channel: string, payload: string): Promise<void> {
    if (this.listening && this.client) await this.inTurn(this.client, 'select pg_notify($1, $2)', [channel, payload]);
  }

  /**
   * A statement on the listening connection after the ones sent before it have answered: the
   * notifications of several tables are sent at once, and pg only queues a second query on a busy
   * client as a deprecated courtesy (pg 9 refuses it).
   */
  private inTurn(client: pg.Client, text: string, values?: unknown[]): Promise<unknown> {
    const run = this.turn.then(() => client.query(text, values));
    this.turn = run.catch(() => {});
    return run;
  }

  /** This instance committed a metadata change: its own next request must not see the old state. */
  changed(): void {
    this.version++;
  }

  private async connect(): Promise<void> {
    const client = new this.driver.Client({ connectionString: this.url, application_name: LISTENER_NAME, keepAlive: true });
    this.client = client;
    const lost = () => {
      if (this.client !== client) return;
      this.client = undefined;
      this.listening = false;
      client.end().catch(() => {});
      this.reconnectLater();
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', (n) => {
      if (n.channel === CHANNEL) this.version++;
      else this.channels.get(n.channel)?.(n.payload ?? '');
    });
    try {
      await client.connect();
      if (await behindPooler(client)) {
        // Never listening: the caches are bypassed, which is slower but never stale.
        this.client = undefined;
        this.closed = true;
        await client.end().catch(() => {});
        process.emitWarning(THROUGH_POOLER);
        return;
      }
      await client.query([CHANNEL, ...this.channels.keys()].map((c) => `listen ${c}`).join('; '));
    } catch {
      lost();
      return;
    }
    if (this.client !== client) return;
    // Whatever changed while nobody listened is unknown: start afresh.
    this.version++;
    this.listening = true;
    this.failures = 0;
    for (const heard of this.channels.values()) heard(null);
  }

  private reconnectLater(): void {
    if (this.closed) return;
    const delay = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** this.failures++);
    this.retry = setTimeout(() => void this.connect(), delay * (0.5 + Math.random() / 2));
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    this.listening = false;
    await client?.end().catch(() => {});
  }
}

/** The metadata tables migration 4 puts triggers on. */
const WATCHED = new Set(['rh_api_keys', 'rh_members', 'rh_tables', 'rh_fields']);

function tableOf(node: OperationNode | undefined): string | undefined {
  if (node && AliasNode.is(node)) return tableOf(node.node);
  return node && TableNode.is(node) ? node.table.identifier.name : undefined;
}

/** Whether a statement changes what the triggers watch (as they do, a lastUsedAt-only update does not). */
function changesMetadata(node: OperationNode): boolean {
  if (InsertQueryNode.is(node)) return WATCHED.has(tableOf(node.into) ?? '');
  if (DeleteQueryNode.is(node)) return node.from.froms.some((f) => WATCHED.has(tableOf(f) ?? ''));
  if (!UpdateQueryNode.is(node)) return false;
  const table = tableOf(node.table) ?? '';
  if (table !== 'rh_api_keys') return WATCHED.has(table);
  return (node.updates ?? []).some((u) => !ColumnNode.is(u.column) || u.column.column.name !== 'lastUsedAt');
}

/**
 * Moves the version when a metadata change made through this Kysely instance is committed (or
 * at once outside a transaction), so the instance that made it enforces it on its very next
 * request without waiting for its own notification. Statements written as raw SQL are not
 * recognised here; their notification still reaches every instance.
 */
class MetadataWriteDriver implements Driver {
  private readonly watched = new WeakSet<DatabaseConnection>();
  private readonly inTransaction = new WeakSet<DatabaseConnection>();
  private readonly dirty = new WeakSet<DatabaseConnection>();

  constructor(
    private readonly inner: Driver,
    private readonly changed: () => void,
  ) {}

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await this.inner.acquireConnection();
    if (!this.watched.has(connection)) {
      this.watched.add(connection);
      // Wrapped in place, as Kysely's own query log does: the driver's BEGIN/COMMIT go through it too.
      const execute = connection.executeQuery.bind(connection);
      connection.executeQuery = async <R>(query: CompiledQuery) => {
        const result = await execute<R>(query);
        if (changesMetadata(query.query)) {
          if (this.inTransaction.has(connection)) this.dirty.add(connection);
          else this.changed();
        }
        return result;
      };
    }
    return connection;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    await this.inner.beginTransaction(connection, settings);
    this.inTransaction.add(connection);
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      await this.inner.commitTransaction(connection);
    } finally {
      // A failed COMMIT may still have committed: treat it as a change.
      this.inTransaction.delete(connection);
      if (this.dirty.delete(connection)) this.changed();
    }
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    this.inTransaction.delete(connection);
    this.dirty.delete(connection);
    await this.inner.rollbackTransaction(connection);
  }

  async savepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    await this.inner.savepoint?.(connection, name, compile);
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    await this.inner.rollbackToSavepoint?.(connection, name, compile);
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']): Promise<void> {
    await this.inner.releaseSavepoint?.(connection, name, compile);
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection(connection);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}

/** The dialect, with its committed metadata changes reported to `changed`. */
export function reportingMetadataWrites(dialect: KyselyDialect, changed: () => void): KyselyDialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createDriver: () => new MetadataWriteDriver(dialect.createDriver(), changed),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createQueryCompiler: () => dialect.createQueryCompiler(),
  };
}
