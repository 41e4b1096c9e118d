import { parseArgs } from 'node:util';
import { CONFIG_FLAGS, ConfigError, loadConfig } from './config.ts';
import { FULL_GRANT, type Grant, scopesProblems, tablesShapeProblems } from './domain/access.ts';
import { generateApiKey } from './domain/api-key.ts';
import { ServiceError } from './domain/errors.ts';
import type { MetaDb } from './store/meta-schema.ts';
import { tableIds } from './store/resources/api-keys.ts';
import { insertApiKey, listApiKeys, revokeApiKey } from './store/auth-store.ts';
import { startServer } from './server.ts';
import { ensureOwner } from './store/bootstrap.ts';
import { type Database, openDatabase } from './store/database.ts';
import { migrate } from './store/migrations.ts';

const USAGE = `Usage: rowhouse <command> [flags]

Commands:
  serve                          start the HTTP service (migrates first)
  migrate                        apply pending database migrations and exit
  api-keys create --name NAME [--scope SCOPE]… [--table TABLE]…
                                 create an API key for the owner member; prints it once.
                                 Without --scope it has every scope, without --table every
                                 table (e.g. --scope rows:read --table orders: a read-only key)
  api-keys list                  list API keys (never the keys themselves)
  api-keys revoke ID             revoke an API key from the next request on

Every command takes the configuration flags (each also an environment variable):
  --port, --host, --data-dir, --database-url, --database-listen-url,
  --prepared-statements, --storage, --public-url, --secret,
  --api-key, --max-body-bytes, --max-file-bytes, --upload-ttl-seconds, --changes-retention-seconds,
  --change-log, --webhook-allow-private, --webhook-attempts, --webhook-retry-base-ms,
  --webhook-timeout-ms, --shutdown-timeout-seconds, --body-timeout-seconds, --log-level,
  --idempotency-ttl-seconds, --rate-limit
`;

class UsageError extends Error {}

/** Opens the configured database, brought up to date, for one command. */
async function withDatabase<T>(flags: Record<string, string>, work: (database: Database, applied: number[]) => Promise<T>): Promise<T> {
  const config = loadConfig(process.env, flags);
  const database = await openDatabase(config.databaseUrl, config);
  try {
    const applied = await migrate(database.db, database.dialect);
    return await work(database, applied);
  } finally {
    await database.close();
  }
}

/** After the shutdown bound has closed every connection, what is left (the database, a webhook attempt in flight) gets this long. */
const SHUTDOWN_GRACE_MS = 5_000;

async function serve(flags: Record<string, string>): Promise<void> {
  const config = loadConfig(process.env, flags);
  const server = await startServer(config);
  const shutdown = (signal: string) => {
    server.app.log.info({ signal }, 'shutting down');
    // The process ends within the bound whatever hangs.
    const deadline = setTimeout(() => {
      server.app.log.error('shutdown did not finish in time: exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs + SHUTDOWN_GRACE_MS);
    deadline.unref();
    server.stop().then(
      () => process.exit(0),
      (err) => {
        server.app.log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

/** --scope and --table as a key's grant (tables by id or code, stored as ids); a usage error names a bad one. */
async function grantOf(db: MetaDb, scopes: string[] | undefined, tables: string[] | undefined): Promise<Grant> {
  const grant = { scopes: scopes ?? [...FULL_GRANT.scopes], tables: tables ?? [...FULL_GRANT.tables] };
  const problems = [...scopesProblems(grant.scopes, '--scope'), ...tablesShapeProblems(grant.tables, '--table')];
  if (problems.length > 0) throw new UsageError(problems.map((p) => `${p.path}: ${p.message}`).join('; '));
  try {
    return { scopes: grant.scopes, tables: await tableIds(db, grant.tables, '--table') };
  } catch (err) {
    if (err instanceof ServiceError) throw new UsageError((err.details ?? []).map((p) => `${p.path}: ${p.message}`).join('; ') || err.message);
    throw err;
  }
}

type Flags = Record<string, string> & { scope?: string[]; table?: string[] };

async function apiKeysCommand(sub: string | undefined, rest: string[], flags: Flags): Promise<void> {
  if (sub === 'create') {
    const name = flags.name;
    if (!name) throw new UsageError('api-keys create needs --name NAME');
    await withDatabase(flags, async ({ db }) => {
      const ownerId = await ensureOwner(db);
      const grant = await grantOf(db, flags.scope, flags.table);
      const key = generateApiKey();
      const id = await insertApiKey(db, key, name, ownerId, grant);
      console.log(`Created API key ${id} (${name}; scopes ${grant.scopes.join(', ')}; tables ${grant.tables.join(', ')}). It is shown only this once:`);
      console.log(key);
    });
  } else if (sub === 'list') {
    await withDatabase(flags, async ({ db }) => {
      const keys = await listApiKeys(db);
      for (const k of keys) {
        const state = k.revokedAt ? `revoked ${k.revokedAt}` : k.expiresAt ? `expires ${k.expiresAt}` : 'active';
        console.log(`${k.id}  ${k.prefix}…  ${k.name}  (${state}; scopes ${k.grant.scopes.join(',')}; tables ${k.grant.tables.join(',')}; last used ${k.lastUsedAt ?? 'never'})`);
      }
      if (keys.length === 0) console.log('No API keys.');
    });
  } else if (sub === 'revoke') {
    const id = rest[0];
    if (!id) throw new UsageError('api-keys revoke needs the key id');
    await withDatabase(flags, async ({ db }) => {
      if (!(await revokeApiKey(db, id))) throw new UsageError(`No active API key ${id}`);
      console.log(`Revoked API key ${id}.`);
    });
  } else {
    throw new UsageError('api-keys takes create, list or revoke');
  }
}

export async function main(argv: string[]): Promise<void> {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { ...CONFIG_FLAGS, name: { type: 'string' }, scope: { type: 'string', multiple: true }, table: { type: 'string', multiple: true }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: true,
    });
    const flags = values as Flags;
    const [command, sub, ...rest] = positionals;
    if (values.help || !command) {
      console.log(USAGE);
      return;
    }
    if (command === 'serve') await serve(flags);
    else if (command === 'migrate') {
      await withDatabase(flags, async (_database, applied) => {
        console.log(applied.length === 0 ? 'No pending migrations.' : `Applied migrations ${applied.join(', ')}.`);
      });
    } else if (command === 'api-keys') await apiKeysCommand(sub, rest, flags);
    else throw new UsageError(`Unknown command ${command}`);
  } catch (err) {
    if (err instanceof UsageError || err instanceof ConfigError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      console.error(`rowhouse: ${(err as Error).message}\n\n${USAGE}`);
      process.exitCode = 2;
      return;
    }
    // The environment at fault (port taken, database down or refusing): a message, not a stack trace.
    const e = err as { code?: unknown; message?: string; errors?: { message?: string }[] };
    if (typeof e.code === 'string') {
      const message = e.message || e.errors?.map((x) => x.message).join('; ') || e.code;
      console.error(`rowhouse: ${message}`);
      process.exitCode = 1;
      return;
    }
    throw err;
  }
}
