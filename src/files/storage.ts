import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../config.ts';
import { openLocalStorage } from './local-storage.ts';
import { openS3Storage, type S3Credentials, type S3Location } from './s3-storage.ts';
import { checkKey, type FileStorage } from './storage-common.ts';

export { checkKey, type FileStorage, FileTooLarge } from './storage-common.ts';

export interface StorageOptions {
  /**
   * S3 credentials. By default the AWS SDK's own chain finds them (AWS_ACCESS_KEY_ID and
   * AWS_SECRET_ACCESS_KEY, AWS_PROFILE, web identity, container or instance roles): tests pass them
   * here instead of changing the process's environment.
   */
  s3Credentials?: S3Credentials;
}

/** The spec as it may be shown: credentials wrongly put in it are not repeated in the message. */
function specError(spec: string, reason: string): ConfigError {
  const shown = spec.replace(/^(s3:\/\/)[^/?#]*@/i, '$1…@');
  return new ConfigError(`ROWHOUSE_STORAGE "${shown}": ${reason}`);
}

/** `file:PATH` (PATH absolute or relative to the working directory) or a `file:///` URL. */
function parseFileSpec(spec: string): string {
  const rest = spec.slice('file:'.length);
  let dir: string;
  if (rest.startsWith('//')) {
    try {
      dir = fileURLToPath(spec);
    } catch (err) {
      throw specError(spec, `not a file path: ${(err as Error).message}`);
    }
  } else {
    dir = rest;
  }
  if (dir === '') throw specError(spec, 'file: needs a directory, as in file:./data/files');
  if (dir.includes('\0')) throw specError(spec, 'the path holds a NUL character');
  return path.resolve(dir);
}

const S3_PARAMS = new Set(['endpoint', 'region', 'forcePathStyle']);
/** S3's bucket naming rules, loosened to the upper case and underscores some compatible stores allow. */
const BUCKET = /^[A-Za-z0-9][A-Za-z0-9._-]{1,61}[A-Za-z0-9]$/;

/** `s3://BUCKET[/PREFIX]?endpoint=…&region=…&forcePathStyle=true`; every part is checked here, before the SDK loads. */
export function parseS3Spec(spec: string, env: NodeJS.ProcessEnv = process.env): S3Location {
  let url: URL;
  try {
    url = new URL(spec);
  } catch {
    throw specError(spec, 'not a URL of the form s3://BUCKET[/PREFIX]?endpoint=…&region=…&forcePathStyle=true');
  }
  if (url.protocol !== 's3:') throw specError(spec, 'must start with s3://');
  if (url.username || url.password) {
    throw specError(spec, 'credentials do not belong in the URL; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY');
  }
  if (url.port) throw specError(spec, 'a bucket has no port; give the server in endpoint=');
  if (url.hash) throw specError(spec, 'unexpected #fragment');
  const bucket = url.hostname;
  if (!BUCKET.test(bucket)) throw specError(spec, `"${bucket}" is not a bucket name`);

  // From the text as written: URL would have resolved `..` and `.` segments away.
  const rawPath = /^s3:\/\/[^/?#]*([^?#]*)/i.exec(spec)?.[1] ?? '';
  let prefix: string;
  try {
    prefix = decodeURIComponent(rawPath).replace(/^\/|\/$/g, '');
  } catch {
    throw specError(spec, 'the prefix is not well percent-encoded');
  }
  if (prefix !== '') {
    try {
      checkKey(prefix);
    } catch {
      throw specError(spec, `the prefix "${prefix}" must be segments of A-Z a-z 0-9 _ . - not starting with a dot`);
    }
  }

  for (const name of url.searchParams.keys()) {
    if (!S3_PARAMS.has(name)) {
      throw specError(spec, `unknown parameter "${name}" (known: ${[...S3_PARAMS].join(', ')})`);
    }
  }
  for (const name of S3_PARAMS) {
    if (url.searchParams.getAll(name).length > 1) throw specError(spec, `"${name}" is given more than once`);
  }

  const endpoint = url.searchParams.get('endpoint') ?? undefined;
  if (endpoint !== undefined) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(endpoint);
    } catch {
      parsed = undefined;
    }
    if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
      throw specError(spec, `endpoint must be an http:// or https:// URL, got "${endpoint}"`);
    }
  }

  const forcePathStyleRaw = url.searchParams.get('forcePathStyle');
  if (forcePathStyleRaw !== null && forcePathStyleRaw !== 'true' && forcePathStyleRaw !== 'false') {
    throw specError(spec, `forcePathStyle must be true or false, got "${forcePathStyleRaw}"`);
  }

  const regionRaw = url.searchParams.get('region');
  if (regionRaw !== null && !/^[a-z0-9-]+$/.test(regionRaw)) {
    throw specError(spec, `"${regionRaw}" is not a region name`);
  }
  // The SDK would look for a region only at the first request and fail there; S3-compatible
  // servers mostly ignore it, and us-east-1 is what they expect when they do not.
  const region = regionRaw ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1';

  return { bucket, prefix, endpoint, region, forcePathStyle: forcePathStyleRaw === 'true' };
}

/**
 * Opens the storage a `ROWHOUSE_STORAGE` value names. Only an s3:// spec loads the AWS SDK, so a
 * service on local disk never pays for it at start.
 */
export async function openStorage(spec: string, options: StorageOptions = {}): Promise<FileStorage> {
  if (spec.startsWith('file:')) return openLocalStorage(parseFileSpec(spec));
  if (spec.startsWith('s3:')) return openS3Storage(parseS3Spec(spec), options.s3Credentials);
  throw specError(spec, 'must start with file: or s3://');
}
