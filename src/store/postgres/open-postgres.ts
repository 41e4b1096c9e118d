import { CompiledQuery, type DatabaseConnection, Kysely, PostgresDialect, sql } from 'kysely';
import type pg from 'pg';
import { warnBackground } from '../warn-background.ts';
import type { Database, DatabaseOptions, Db } from '../dialect.ts';
import { postgresChangeNumbering } from './change-numbering.ts';
import { PostgresChangeSignals } from './change-signals.ts';
import { IN_UTC, PostgresReads } from './cursor.ts';
import { postgresDialect } from './dialect.ts';
import { MetadataListener, reportingMetadataWrites } from './metadata-listener.ts';
import { PreparedStatements } from './prepared-statements.ts';
import { postgresStatistics } from './statistics.ts';

/** PostgreSQL's Database, with its export reads (a test counts the cursors they open). */
export interface PostgresAdapter extends Database {
  reads: PostgresReads;
}

export function openPostgres(driver: typeof pg, url: string, options: DatabaseOptions): PostgresAdapter {
  // Connections end after a quarter of an hour (each then opened anew as needed), and with them
  // the statements prepared on them for table versions since replaced.
  const pool = new driver.Pool({ connectionString: url, max: 10, maxLifetimeSeconds: 900 });
  // An idle client that errors (server restart) must not crash the process.
  pool.on('error', () => {});
  const prepared = new PreparedStatements(options.preparedStatements);
  // LISTEN needs a session of its own, which a pooler in transaction mode does not give: DATABASE_LISTEN_URL may name a direct connection.
  const listener = new MetadataListener(driver, options.databaseListenUrl ?? url);
  const sessionInUtc = async (connection: DatabaseConnection) => {
    await connection.executeQuery(CompiledQuery.raw(IN_UTC));
  };
  const dialect = reportingMetadataWrites(new PostgresDialect({ pool: prepared.pool(pool), onCreateConnection: sessionInUtc }), () => listener.changed());
  const { onQuery } = options;
  const db: Db = new Kysely({ dialect, ...(onQuery ? { log: (event) => onQuery(event.query.sql) } : {}) });
  const statistics = postgresStatistics(db, warnBackground('planner statistics'));
  const reads = new PostgresReads(driver, url, db);
  const prepare = (text: string) => prepared.mark(text);
  const changeSignals = new PostgresChangeSignals(listener);
  return {
    db,
    dialect: postgresDialect,
    statistics,
    changeNumbering: postgresChangeNumbering(prepare),
    changeSignals,
    reads,
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    metadataVersion: () => listener.current(),
    prepare,
    scan: (scan) => reads.scan(scan),
    insertEach: () => {
      throw new Error('insertEach: PostgreSQL inserts several rows a statement (rowsPerInsert)');
    },
    // Its connections' settings serve imports as they are.
    tuneForImport: () => () => {},
    close: async () => {
      await statistics.close();
      await changeSignals.close();
      await listener.close();
      await reads.close();
      await db.destroy();
    },
  };
}
