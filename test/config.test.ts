import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig, parseConfigFlags } from '../src/config.ts';

const CWD = path.resolve('/srv/rowhouse-app');

describe('loadConfig', () => {
  it('has the documented defaults, anchored at the working directory', () => {
    const c = loadConfig({}, {}, CWD);
    assert.equal(c.port, 8080);
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.dataDir, path.join(CWD, 'data'));
    assert.equal(c.databaseUrl, `sqlite:${path.join(CWD, 'data', 'rowhouse.db')}`);
    assert.equal(c.storage, `file:${path.join(CWD, 'data', 'files')}`);
    assert.equal(c.publicUrl, 'http://127.0.0.1:8080');
    assert.equal(c.secret, null);
    assert.equal(c.apiKey, null);
    assert.equal(c.maxBodyBytes, 16 * 1024 * 1024);
    assert.equal(c.maxFileBytes, 100 * 1024 * 1024);
    assert.equal(c.uploadTtlSeconds, 86400);
    assert.equal(c.logLevel, 'info');
    assert.equal(c.shutdownTimeoutMs, 10_000);
    assert.equal(c.bodyTimeoutMs, 60_000);
    assert.equal(c.databaseListenUrl, c.databaseUrl, 'LISTEN goes where everything else does');
    assert.equal(c.preparedStatements, 'auto');
    assert.equal(c.idempotencyTtlSeconds, 86400);
    assert.equal(c.rateLimit, null, 'no rate limit unless ROWHOUSE_RATE_LIMIT sets one');
  });

  it('reads DATABASE_LISTEN_URL and ROWHOUSE_PREPARED_STATEMENTS (PgBouncer in transaction mode), from the environment or flags', () => {
    const pooled = 'postgres://u:p@pgbouncer:6432/rh';
    const direct = 'postgresql://u:p@db:5432/rh';
    assert.equal(loadConfig({ DATABASE_URL: pooled }, {}, CWD).databaseListenUrl, pooled, 'the default is DATABASE_URL');
    const c = loadConfig({ DATABASE_URL: pooled, DATABASE_LISTEN_URL: direct, ROWHOUSE_PREPARED_STATEMENTS: 'off' }, {}, CWD);
    assert.equal(c.databaseUrl, pooled);
    assert.equal(c.databaseListenUrl, direct);
    assert.equal(c.preparedStatements, 'off');
    const f = loadConfig({ DATABASE_URL: pooled, DATABASE_LISTEN_URL: direct }, parseConfigFlags(['--database-listen-url', 'postgres://db2/rh', '--prepared-statements', 'on']), CWD);
    assert.equal(f.databaseListenUrl, 'postgres://db2/rh');
    assert.equal(f.preparedStatements, 'on');
    assert.equal(loadConfig({ ROWHOUSE_PREPARED_STATEMENTS: 'auto' }, {}, CWD).preparedStatements, 'auto');
    assert.equal(loadConfig({ DATABASE_URL: pooled, DATABASE_LISTEN_URL: '' }, {}, CWD).databaseListenUrl, pooled, 'empty counts as unset');
  });

  it('reads the default rate limit and the idempotency TTL (CONTRACT §12), from the environment or flags', () => {
    const c = loadConfig({ ROWHOUSE_RATE_LIMIT: '600/60', ROWHOUSE_IDEMPOTENCY_TTL_SECONDS: '3600' }, {}, CWD);
    assert.deepEqual(c.rateLimit, { requests: 600, perSeconds: 60 });
    assert.equal(c.idempotencyTtlSeconds, 3600);
    assert.deepEqual(loadConfig({ ROWHOUSE_RATE_LIMIT: '600/60' }, { 'rate-limit': '5/1' }, CWD).rateLimit, { requests: 5, perSeconds: 1 });
    assert.equal(loadConfig({ ROWHOUSE_RATE_LIMIT: 'off' }, {}, CWD).rateLimit, null);
  });

  it('reads every environment variable', () => {
    const c = loadConfig(
      {
        PORT: '9091',
        HOST: '0.0.0.0',
        ROWHOUSE_DATA_DIR: '/var/lib/rowhouse',
        DATABASE_URL: 'postgres://u:p@db.example:5432/rh',
        ROWHOUSE_STORAGE: 's3://bucket/prefix?endpoint=http://minio:9000&region=us-east-1&forcePathStyle=true',
        ROWHOUSE_PUBLIC_URL: 'https://rows.example.com/',
        ROWHOUSE_SECRET: 'a-secret-of-enough-length',
        ROWHOUSE_API_KEY: 'automation-key-0123456789',
        ROWHOUSE_MAX_BODY_BYTES: '4096',
        ROWHOUSE_MAX_FILE_BYTES: '123',
        ROWHOUSE_UPLOAD_TTL_SECONDS: '60',
        ROWHOUSE_LOG_LEVEL: 'warn',
      },
      {},
      CWD,
    );
    assert.equal(c.port, 9091);
    assert.equal(c.host, '0.0.0.0');
    assert.equal(c.dataDir, '/var/lib/rowhouse');
    assert.equal(c.databaseUrl, 'postgres://u:p@db.example:5432/rh');
    assert.equal(c.storage, 's3://bucket/prefix?endpoint=http://minio:9000&region=us-east-1&forcePathStyle=true');
    assert.equal(c.publicUrl, 'https://rows.example.com', 'the trailing slash is dropped');
    assert.equal(c.secret, 'a-secret-of-enough-length');
    assert.equal(c.apiKey, 'automation-key-0123456789');
    assert.equal(c.maxBodyBytes, 4096);
    assert.equal(c.maxFileBytes, 123);
    assert.equal(c.uploadTtlSeconds, 60);
    assert.equal(c.logLevel, 'warn');
  });

  it('derives the database, storage and public URL defaults from the data dir, HOST and PORT', () => {
    const c = loadConfig({ ROWHOUSE_DATA_DIR: 'state', PORT: '3000', HOST: '10.0.0.5' }, {}, CWD);
    assert.equal(c.dataDir, path.join(CWD, 'state'));
    assert.equal(c.databaseUrl, `sqlite:${path.join(CWD, 'state', 'rowhouse.db')}`);
    assert.equal(c.storage, `file:${path.join(CWD, 'state', 'files')}`);
    assert.equal(c.publicUrl, 'http://10.0.0.5:3000');
    assert.equal(loadConfig({ HOST: '::1', PORT: '81' }, {}, CWD).publicUrl, 'http://[::1]:81');
  });

  it('treats an empty variable as unset', () => {
    const c = loadConfig({ PORT: '', HOST: '', ROWHOUSE_API_KEY: '', DATABASE_URL: '' }, {}, CWD);
    assert.equal(c.port, 8080);
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.apiKey, null);
    assert.match(c.databaseUrl, /^sqlite:/);
  });

  it('lets flags override the environment, setting by setting', () => {
    const env = {
      PORT: '1111', HOST: '10.1.1.1', ROWHOUSE_DATA_DIR: '/env/data', DATABASE_URL: 'sqlite:/env/db.sqlite',
      ROWHOUSE_STORAGE: 'file:/env/files', ROWHOUSE_PUBLIC_URL: 'http://env.example', ROWHOUSE_SECRET: 'env-secret-0123456789',
      ROWHOUSE_API_KEY: 'env-key-0123456789abc', ROWHOUSE_MAX_BODY_BYTES: '5000', ROWHOUSE_MAX_FILE_BYTES: '6000',
      ROWHOUSE_UPLOAD_TTL_SECONDS: '70', ROWHOUSE_LOG_LEVEL: 'error',
    };
    const flags = parseConfigFlags([
      '--port', '2222', '--host', '10.2.2.2', '--data-dir', '/flag/data', '--database-url', 'postgresql://h/db',
      '--storage', 's3://b', '--public-url', 'https://flag.example', '--secret', 'flag-secret-0123456789',
      '--api-key', 'flag-key-0123456789abc', '--max-body-bytes', '7000', '--max-file-bytes', '8000',
      '--upload-ttl-seconds', '90', '--log-level', 'debug',
    ]);
    const c = loadConfig(env, flags, CWD);
    assert.equal(c.port, 2222);
    assert.equal(c.host, '10.2.2.2');
    assert.equal(c.dataDir, '/flag/data');
    assert.equal(c.databaseUrl, 'postgresql://h/db');
    assert.equal(c.storage, 's3://b');
    assert.equal(c.publicUrl, 'https://flag.example');
    assert.equal(c.secret, 'flag-secret-0123456789');
    assert.equal(c.apiKey, 'flag-key-0123456789abc');
    assert.equal(c.maxBodyBytes, 7000);
    assert.equal(c.maxFileBytes, 8000);
    assert.equal(c.uploadTtlSeconds, 90);
    assert.equal(c.logLevel, 'debug');

    // A flag for one setting leaves the others to the environment.
    const some = loadConfig(env, parseConfigFlags(['--port', '3333']), CWD);
    assert.equal(some.port, 3333);
    assert.equal(some.host, '10.1.1.1');
    assert.equal(some.databaseUrl, 'sqlite:/env/db.sqlite');
  });

  it('a flag data dir moves the derived defaults with it', () => {
    const c = loadConfig({ ROWHOUSE_DATA_DIR: '/env/data' }, { 'data-dir': '/flag/data' }, CWD);
    assert.equal(c.databaseUrl, `sqlite:${path.join('/flag/data', 'rowhouse.db')}`);
    assert.equal(c.storage, `file:${path.join('/flag/data', 'files')}`);
  });

  it('reads the shutdown and body timeouts in seconds, from the environment or flags', () => {
    const c = loadConfig({ ROWHOUSE_SHUTDOWN_TIMEOUT_SECONDS: '3', ROWHOUSE_BODY_TIMEOUT_SECONDS: '45' }, {}, CWD);
    assert.equal(c.shutdownTimeoutMs, 3000);
    assert.equal(c.bodyTimeoutMs, 45_000);
    const f = loadConfig({ ROWHOUSE_SHUTDOWN_TIMEOUT_SECONDS: '3' }, parseConfigFlags(['--shutdown-timeout-seconds', '20', '--body-timeout-seconds', '1']), CWD);
    assert.equal(f.shutdownTimeoutMs, 20_000);
    assert.equal(f.bodyTimeoutMs, 1000);
  });

  it('accepts the boundary values', () => {
    assert.equal(loadConfig({ PORT: '0' }, {}, CWD).port, 0);
    assert.equal(loadConfig({ PORT: '65535' }, {}, CWD).port, 65535);
    assert.equal(loadConfig({ ROWHOUSE_API_KEY: 'x'.repeat(16) }, {}, CWD).apiKey, 'x'.repeat(16));
    assert.equal(loadConfig({ ROWHOUSE_MAX_BODY_BYTES: '1024' }, {}, CWD).maxBodyBytes, 1024);
  });

  const bad: [string, Record<string, string>, RegExp][] = [
    ['a port that is not a number', { PORT: 'http' }, /PORT/],
    ['a negative port', { PORT: '-1' }, /PORT/],
    ['a port above 65535', { PORT: '65536' }, /PORT/],
    ['a fractional port', { PORT: '80.5' }, /PORT/],
    ['an unknown database scheme', { DATABASE_URL: 'mysql://h/db' }, /DATABASE_URL/],
    ['a bare database path', { DATABASE_URL: '/tmp/rowhouse.db' }, /DATABASE_URL/],
    ['an unknown storage scheme', { ROWHOUSE_STORAGE: 'ftp://files' }, /ROWHOUSE_STORAGE/],
    ['a public URL that is not a URL', { ROWHOUSE_PUBLIC_URL: 'not a url' }, /ROWHOUSE_PUBLIC_URL/],
    ['a public URL without http(s)', { ROWHOUSE_PUBLIC_URL: 'localhost:8080' }, /ROWHOUSE_PUBLIC_URL/],
    ['a 15-character API key', { ROWHOUSE_API_KEY: 'x'.repeat(15) }, /ROWHOUSE_API_KEY.*16/],
    ['a short secret', { ROWHOUSE_SECRET: 'short' }, /ROWHOUSE_SECRET/],
    ['a body limit that is not a number', { ROWHOUSE_MAX_BODY_BYTES: '16MB' }, /ROWHOUSE_MAX_BODY_BYTES/],
    ['a zero body limit', { ROWHOUSE_MAX_BODY_BYTES: '0' }, /ROWHOUSE_MAX_BODY_BYTES/],
    ['a zero file limit', { ROWHOUSE_MAX_FILE_BYTES: '0' }, /ROWHOUSE_MAX_FILE_BYTES/],
    ['a negative upload TTL', { ROWHOUSE_UPLOAD_TTL_SECONDS: '-5' }, /ROWHOUSE_UPLOAD_TTL_SECONDS/],
    ['a zero upload TTL', { ROWHOUSE_UPLOAD_TTL_SECONDS: '0' }, /ROWHOUSE_UPLOAD_TTL_SECONDS/],
    ['an unknown log level', { ROWHOUSE_LOG_LEVEL: 'loud' }, /ROWHOUSE_LOG_LEVEL/],
    ['a zero shutdown timeout', { ROWHOUSE_SHUTDOWN_TIMEOUT_SECONDS: '0' }, /ROWHOUSE_SHUTDOWN_TIMEOUT_SECONDS/],
    ['a shutdown timeout in milliseconds', { ROWHOUSE_SHUTDOWN_TIMEOUT_SECONDS: '10s' }, /ROWHOUSE_SHUTDOWN_TIMEOUT_SECONDS/],
    ['a zero body timeout', { ROWHOUSE_BODY_TIMEOUT_SECONDS: '0' }, /ROWHOUSE_BODY_TIMEOUT_SECONDS/],
    ['a body timeout over an hour', { ROWHOUSE_BODY_TIMEOUT_SECONDS: '3601' }, /ROWHOUSE_BODY_TIMEOUT_SECONDS/],
    ['a listen URL that is not PostgreSQL', { DATABASE_URL: 'postgres://pgbouncer/rh', DATABASE_LISTEN_URL: 'db:5432' }, /DATABASE_LISTEN_URL.*postgres:\/\//],
    ['a listen URL with SQLite', { DATABASE_URL: 'sqlite:/tmp/rh.db', DATABASE_LISTEN_URL: 'postgres://db/rh' }, /DATABASE_LISTEN_URL.*PostgreSQL only/],
    ['an unknown prepared statements mode', { ROWHOUSE_PREPARED_STATEMENTS: 'true' }, /ROWHOUSE_PREPARED_STATEMENTS.*auto, on, off/],
    ['a rate limit without its window', { ROWHOUSE_RATE_LIMIT: '600' }, /ROWHOUSE_RATE_LIMIT/],
    ['a rate limit of zero requests', { ROWHOUSE_RATE_LIMIT: '0/60' }, /ROWHOUSE_RATE_LIMIT/],
    ['a rate limit in words', { ROWHOUSE_RATE_LIMIT: '600 per minute' }, /ROWHOUSE_RATE_LIMIT/],
    ['a zero idempotency TTL', { ROWHOUSE_IDEMPOTENCY_TTL_SECONDS: '0' }, /ROWHOUSE_IDEMPOTENCY_TTL_SECONDS/],
  ];
  for (const [what, env, message] of bad) {
    it(`rejects ${what} with a ConfigError naming the variable`, () => {
      assert.throws(() => loadConfig(env, {}, CWD), (err: unknown) => err instanceof ConfigError && message.test(err.message));
    });
  }

  it('rejects a bad value given as a flag, even when the environment is fine', () => {
    assert.throws(() => loadConfig({ PORT: '8080' }, { port: 'eighty' }, CWD), ConfigError);
    assert.throws(() => loadConfig({}, { 'api-key': 'too-short' }, CWD), ConfigError);
  });
});

describe('parseConfigFlags', () => {
  it('rejects unknown flags and stray arguments', () => {
    assert.throws(() => parseConfigFlags(['--bogus', 'x']));
    assert.throws(() => parseConfigFlags(['serve']));
  });
});
