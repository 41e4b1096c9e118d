import path from 'node:path';
import { parseArgs } from 'node:util';
import { type RateLimit, parseRateLimitText } from './domain/access.ts';

/** Everything the service is configured with, parsed in this one place (CONTRACT §1). */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string;
  /** PostgreSQL: where the LISTEN connection goes (a direct connection, never a transaction pooler's). */
  databaseListenUrl: string;
  /** PostgreSQL: whether hot statements run as named prepared statements; auto: unless behind a connection pooler. */
  preparedStatements: PreparedStatementsMode;
  storage: string;
  publicUrl: string;
  /** null: generated once and kept in the database. */
  secret: string | null;
  /** When set, this key is made to exist at start, owned by the owner member. */
  apiKey: string | null;
  maxBodyBytes: number;
  maxFileBytes: number;
  uploadTtlSeconds: number;
  /** How long the change log keeps changes. */
  changesRetentionSeconds: number;
  /** Whether row writes are recorded in the change log: only off to measure what it costs (bench/). */
  changeLog: boolean;
  /** Whether webhook URLs may reach loopback, link-local, private and unique-local addresses. */
  webhookAllowPrivate: boolean;
  /** Attempts of a webhook delivery before it is failed (the first included). */
  webhookAttempts: number;
  /** The wait before the first retry; each later one waits twice the one before. */
  webhookRetryBaseMs: number;
  /** How long one webhook request may take, connecting included. */
  webhookTimeoutMs: number;
  /** Bounded wait for requests in flight on shutdown; past it their connections are closed. */
  shutdownTimeoutMs: number;
  /** A request body that stops arriving for this long fails with 408 (a stalled upload holds nothing longer). */
  bodyTimeoutMs: number;
  /** pino level; `info` writes one access log line per request, `warn` and above silence it. */
  logLevel: string;
  /** How long the answer to a request with an Idempotency-Key is kept (CONTRACT §12). */
  idempotencyTtlSeconds: number;
  /** The rate limit of keys without one of their own (CONTRACT §12); null: none. */
  rateLimit: RateLimit | null;
}

export class ConfigError extends Error {}

export const PREPARED_STATEMENTS_MODES = ['auto', 'on', 'off'] as const;
export type PreparedStatementsMode = (typeof PREPARED_STATEMENTS_MODES)[number];

/** Each setting: its environment variable and the `rowhouse serve` flag that overrides it. */
const SETTINGS = {
  port: { env: 'PORT', flag: 'port' },
  host: { env: 'HOST', flag: 'host' },
  dataDir: { env: 'ROWHOUSE_DATA_DIR', flag: 'data-dir' },
  databaseUrl: { env: 'DATABASE_URL', flag: 'database-url' },
  databaseListenUrl: { env: 'DATABASE_LISTEN_URL', flag: 'database-listen-url' },
  preparedStatements: { env: 'ROWHOUSE_PREPARED_STATEMENTS', flag: 'prepared-statements' },
  storage: { env: 'ROWHOUSE_STORAGE', flag: 'storage' },
  publicUrl: { env: 'ROWHOUSE_PUBLIC_URL', flag: 'public-url' },
  secret: { env: 'ROWHOUSE_SECRET', flag: 'secret' },
  apiKey: { env: 'ROWHOUSE_API_KEY', flag: 'api-key' },
  maxBodyBytes: { env: 'ROWHOUSE_MAX_BODY_BYTES', flag: 'max-body-bytes' },
  maxFileBytes: { env: 'ROWHOUSE_MAX_FILE_BYTES', flag: 'max-file-bytes' },
  uploadTtlSeconds: { env: 'ROWHOUSE_UPLOAD_TTL_SECONDS', flag: 'upload-ttl-seconds' },
  changesRetentionSeconds: { env: 'ROWHOUSE_CHANGES_RETENTION_SECONDS', flag: 'changes-retention-seconds' },
  changeLog: { env: 'ROWHOUSE_CHANGE_LOG', flag: 'change-log' },
  webhookAllowPrivate: { env: 'ROWHOUSE_WEBHOOK_ALLOW_PRIVATE', flag: 'webhook-allow-private' },
  webhookAttempts: { env: 'ROWHOUSE_WEBHOOK_ATTEMPTS', flag: 'webhook-attempts' },
  webhookRetryBaseMs: { env: 'ROWHOUSE_WEBHOOK_RETRY_BASE_MS', flag: 'webhook-retry-base-ms' },
  webhookTimeoutMs: { env: 'ROWHOUSE_WEBHOOK_TIMEOUT_MS', flag: 'webhook-timeout-ms' },
  shutdownTimeoutSeconds: { env: 'ROWHOUSE_SHUTDOWN_TIMEOUT_SECONDS', flag: 'shutdown-timeout-seconds' },
  bodyTimeoutSeconds: { env: 'ROWHOUSE_BODY_TIMEOUT_SECONDS', flag: 'body-timeout-seconds' },
  logLevel: { env: 'ROWHOUSE_LOG_LEVEL', flag: 'log-level' },
  idempotencyTtlSeconds: { env: 'ROWHOUSE_IDEMPOTENCY_TTL_SECONDS', flag: 'idempotency-ttl-seconds' },
  rateLimit: { env: 'ROWHOUSE_RATE_LIMIT', flag: 'rate-limit' },
} as const;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

type SettingName = keyof typeof SETTINGS;

/** The flag definitions for `util.parseArgs`, derived from SETTINGS. */
export const CONFIG_FLAGS = Object.fromEntries(
  Object.values(SETTINGS).map((s) => [s.flag, { type: 'string' as const }]),
);

function integer(name: string, raw: string, min: number, max: number): number {
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

/**
 * Builds the Config from environment variables, with flags (already parsed) taking precedence.
 * `cwd` anchors the relative default data directory.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  flags: Partial<Record<string, string>> = {},
  cwd: string = process.cwd(),
): Config {
  const get = (name: SettingName): string | undefined => {
    const s = SETTINGS[name];
    const v = flags[s.flag] ?? env[s.env];
    return v === undefined || v === '' ? undefined : v;
  };
  const label = (name: SettingName) => SETTINGS[name].env;

  const port = integer(label('port'), get('port') ?? '8080', 0, 65535);
  const host = get('host') ?? '127.0.0.1';
  const dataDir = path.resolve(cwd, get('dataDir') ?? './data');
  const databaseUrl = get('databaseUrl') ?? `sqlite:${path.join(dataDir, 'rowhouse.db')}`;
  if (!/^(sqlite:|postgres:\/\/|postgresql:\/\/)/.test(databaseUrl)) {
    throw new ConfigError(`${label('databaseUrl')} must start with sqlite: or postgres://`);
  }
  const databaseListenUrl = get('databaseListenUrl') ?? databaseUrl;
  if (databaseListenUrl !== databaseUrl) {
    if (databaseUrl.startsWith('sqlite:')) throw new ConfigError(`${label('databaseListenUrl')} is for PostgreSQL only: ${label('databaseUrl')} names SQLite`);
    if (!/^postgres(ql)?:\/\//.test(databaseListenUrl)) throw new ConfigError(`${label('databaseListenUrl')} must start with postgres:// or postgresql://`);
  }
  const preparedStatements = get('preparedStatements') ?? 'auto';
  if (!(PREPARED_STATEMENTS_MODES as readonly string[]).includes(preparedStatements)) {
    throw new ConfigError(`${label('preparedStatements')} must be one of ${PREPARED_STATEMENTS_MODES.join(', ')}, got "${preparedStatements}"`);
  }
  const storage = get('storage') ?? `file:${path.join(dataDir, 'files')}`;
  if (!/^(file:|s3:\/\/)/.test(storage)) {
    throw new ConfigError(`${label('storage')} must start with file: or s3://`);
  }
  const publicUrl = (get('publicUrl') ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/+$/, '');
  let publicProtocol: string | null = null;
  try {
    publicProtocol = new URL(publicUrl).protocol;
  } catch {
    // Reported below.
  }
  // "localhost:8080" parses as a URL with the scheme "localhost:"; every link built on it would be broken.
  if (publicProtocol !== 'http:' && publicProtocol !== 'https:') {
    throw new ConfigError(`${label('publicUrl')} must be an http:// or https:// URL, got "${publicUrl}"`);
  }
  const apiKey = get('apiKey') ?? null;
  if (apiKey !== null && apiKey.length < 16) {
    throw new ConfigError(`${label('apiKey')} must be at least 16 characters`);
  }
  const secret = get('secret') ?? null;
  if (secret !== null && secret.length < 16) {
    throw new ConfigError(`${label('secret')} must be at least 16 characters`);
  }
  const logLevel = get('logLevel') ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`${label('logLevel')} must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const rateLimitText = get('rateLimit') ?? 'off';
  const rateLimit = rateLimitText === 'off' ? null : parseRateLimitText(rateLimitText);
  if (rateLimitText !== 'off' && !rateLimit) {
    throw new ConfigError(`${label('rateLimit')} must be requests/seconds with positive whole numbers (600/60: 600 requests a minute per key), or off; got "${rateLimitText}"`);
  }
  return {
    port,
    host,
    dataDir,
    databaseUrl,
    databaseListenUrl,
    preparedStatements: preparedStatements as PreparedStatementsMode,
    storage,
    publicUrl,
    secret,
    apiKey,
    maxBodyBytes: integer(label('maxBodyBytes'), get('maxBodyBytes') ?? String(16 * 1024 * 1024), 1024, 2 ** 31),
    maxFileBytes: integer(label('maxFileBytes'), get('maxFileBytes') ?? String(100 * 1024 * 1024), 1, 2 ** 40),
    uploadTtlSeconds: integer(label('uploadTtlSeconds'), get('uploadTtlSeconds') ?? '86400', 1, 2 ** 31),
    changesRetentionSeconds: integer(label('changesRetentionSeconds'), get('changesRetentionSeconds') ?? String(7 * 86400), 1, 2 ** 31),
    changeLog: onOff(label('changeLog'), get('changeLog') ?? 'on'),
    webhookAllowPrivate: trueFalse(label('webhookAllowPrivate'), get('webhookAllowPrivate') ?? 'false'),
    webhookAttempts: integer(label('webhookAttempts'), get('webhookAttempts') ?? '10', 1, 100),
    webhookRetryBaseMs: integer(label('webhookRetryBaseMs'), get('webhookRetryBaseMs') ?? '10000', 1, 86_400_000),
    webhookTimeoutMs: integer(label('webhookTimeoutMs'), get('webhookTimeoutMs') ?? '10000', 1, 600_000),
    shutdownTimeoutMs: integer(label('shutdownTimeoutSeconds'), get('shutdownTimeoutSeconds') ?? '10', 1, 3600) * 1000,
    bodyTimeoutMs: integer(label('bodyTimeoutSeconds'), get('bodyTimeoutSeconds') ?? '60', 1, 3600) * 1000,
    logLevel,
    idempotencyTtlSeconds: integer(label('idempotencyTtlSeconds'), get('idempotencyTtlSeconds') ?? '86400', 1, 2 ** 31),
    rateLimit,
  };
}

function onOff(name: string, value: string): boolean {
  if (value !== 'on' && value !== 'off') throw new ConfigError(`${name} must be on or off, got "${value}"`);
  return value === 'on';
}

function trueFalse(name: string, value: string): boolean {
  if (value !== 'true' && value !== 'false') throw new ConfigError(`${name} must be true or false, got "${value}"`);
  return value === 'true';
}

/** Parses `rowhouse serve` style flags into the shape loadConfig takes. */
export function parseConfigFlags(args: string[]): Record<string, string> {
  const { values } = parseArgs({ args, options: CONFIG_FLAGS, strict: true, allowPositionals: false });
  return values as Record<string, string>;
}
