// Starts an S3-compatible server (s3rver) on 127.0.0.1, on a port the system picks, over a temporary
// directory, with one bucket, for the tests of the S3 storage backend.
//
// s3rver checks the expiry of presigned URLs but not Signature Version 4 signatures (its source
// says "Signature version 4 calculation is unimplemented": any signature passes), and it serves
// unsigned requests as an anonymous user. So that the tests see what S3 does with a private bucket,
// every request first goes through verifySignatureV4 below, an independent implementation of
// AWS's specification (not the SDK's signer): a request with no signature, or a signature that does
// not match the request, gets 403 as from S3. s3rver also lacks AbortMultipartUpload (it answers
// 405), which is added here, and pendingUploads() tells which multipart uploads were left unfinished.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';

/** s3rver's one account. */
export const S3RVER_CREDENTIALS = Object.freeze({ accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' });
const SECRETS = new Map([[S3RVER_CREDENTIALS.accessKeyId, S3RVER_CREDENTIALS.secretAccessKey]]);

/** encodeURIComponent plus the characters RFC 3986 reserves that it leaves alone, as SigV4 wants. */
function uriEncode(s) {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function decode(s) {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

const hmac = (key, text) => createHmac('sha256', key).update(text, 'utf8').digest();
const sha256 = (text) => createHash('sha256').update(text, 'utf8').digest('hex');

/** The query's parameters as sent, decoded, in order; null if one cannot be decoded. */
function queryParams(rawQuery) {
  const params = [];
  for (const part of rawQuery.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const name = decode(eq < 0 ? part : part.slice(0, eq));
    const value = decode(eq < 0 ? '' : part.slice(eq + 1));
    if (name === null || value === null) return null;
    params.push([name, value]);
  }
  return params;
}

const denied = (code, message) => ({ code, message });

/**
 * Checks a request's AWS Signature Version 4, given in the query (a presigned URL) or in the
 * Authorization header, against the secret of its access key. Returns null when it holds, else the
 * S3 error code and message to refuse it with. The payload itself is not hashed: the request's
 * x-amz-content-sha256 (or UNSIGNED-PAYLOAD) stands in the canonical request as the client signed it.
 */
export function verifySignatureV4(method, rawUrl, headers, now = Date.now()) {
  const q = rawUrl.indexOf('?');
  const rawPath = q < 0 ? rawUrl : rawUrl.slice(0, q);
  const params = queryParams(q < 0 ? '' : rawUrl.slice(q + 1));
  if (params === null) return denied('AccessDenied', 'Malformed query string');
  const get = (name) => params.find(([n]) => n === name)?.[1];

  let credential, signedHeaders, signature, amzDate, payloadHash, expires, signedParams;
  if (get('X-Amz-Algorithm') !== undefined) {
    if (get('X-Amz-Algorithm') !== 'AWS4-HMAC-SHA256') return denied('AccessDenied', 'Unsupported X-Amz-Algorithm');
    credential = get('X-Amz-Credential');
    signedHeaders = get('X-Amz-SignedHeaders');
    signature = get('X-Amz-Signature');
    amzDate = get('X-Amz-Date');
    expires = Number(get('X-Amz-Expires'));
    payloadHash = get('X-Amz-Content-Sha256') ?? 'UNSIGNED-PAYLOAD';
    signedParams = params.filter(([n]) => n !== 'X-Amz-Signature');
    if (!Number.isInteger(expires) || expires < 1 || expires > 604800) {
      return denied('AuthorizationQueryParametersError', 'X-Amz-Expires must be 1 to 604800 seconds');
    }
  } else if (typeof headers.authorization === 'string') {
    const m = /^AWS4-HMAC-SHA256 Credential=([^,\s]+),\s*SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]+)$/.exec(headers.authorization);
    if (!m) return denied('AccessDenied', 'Unsupported Authorization header');
    [, credential, signedHeaders, signature] = m;
    amzDate = headers['x-amz-date'];
    payloadHash = headers['x-amz-content-sha256'];
    signedParams = params;
    if (typeof payloadHash !== 'string') return denied('InvalidRequest', 'Missing x-amz-content-sha256');
  } else {
    return denied('AccessDenied', 'Access Denied'); // anonymous: the bucket is private
  }
  if (!credential || !signedHeaders || !signature || !amzDate) {
    return denied('AuthorizationQueryParametersError', 'Incomplete signature parameters');
  }

  const [accessKeyId, day, region, service, terminator, ...extra] = credential.split('/');
  const secret = SECRETS.get(accessKeyId);
  if (secret === undefined) return denied('InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.');
  const dateMatch = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
  if (extra.length > 0 || terminator !== 'aws4_request' || service !== 's3' || !dateMatch || day !== amzDate.slice(0, 8)) {
    return denied('AuthorizationQueryParametersError', 'Malformed credential scope or date');
  }
  const [, y, mo, d, h, mi, s] = dateMatch.map(Number);
  const signedAt = Date.UTC(y, mo - 1, d, h, mi, s);
  if (expires !== undefined && now > signedAt + expires * 1000) return denied('AccessDenied', 'Request has expired');

  const headerNames = signedHeaders.split(';');
  if (!headerNames.includes('host')) return denied('AccessDenied', 'The host header must be signed');
  let canonicalHeaders = '';
  for (const name of headerNames) {
    const value = headers[name];
    if (value === undefined) return denied('AccessDenied', `Signed header ${name} is missing`);
    canonicalHeaders += `${name}:${String(value).trim().replace(/\s+/g, ' ')}\n`;
  }
  const segments = rawPath.split('/').map(decode);
  if (segments.includes(null)) return denied('AccessDenied', 'Malformed path');
  const canonicalRequest = [
    method,
    segments.map(uriEncode).join('/'),
    signedParams
      .map(([n, v]) => [uriEncode(n), uriEncode(v)])
      .sort(([n1, v1], [n2, v2]) => (n1 < n2 ? -1 : n1 > n2 ? 1 : v1 < v2 ? -1 : v1 > v2 ? 1 : 0))
      .map(([n, v]) => `${n}=${v}`)
      .join('&'),
    canonicalHeaders,
    signedHeaders,
    payloadHash,
  ].join('\n');
  const scope = [day, region, service, terminator].join('/');
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonicalRequest)].join('\n');
  const key = [day, region, service, terminator].reduce((k, part) => hmac(k, part), `AWS4${secret}`);
  const expected = Buffer.from(createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex'));
  const given = Buffer.from(signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return denied('SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided.');
  }
  return null;
}

function answer(ctx, status, code, message) {
  const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  ctx.status = status;
  ctx.type = 'application/xml';
  ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${esc(code)}</Code><Message>${esc(message)}</Message></Error>`;
}

/**
 * @param {{ bucket?: string }} [options]
 * @returns {Promise<{ endpoint: string, bucket: string, spec: string,
 *   credentials: { accessKeyId: string, secretAccessKey: string },
 *   env: { AWS_ACCESS_KEY_ID: string, AWS_SECRET_ACCESS_KEY: string },
 *   pendingUploads: () => string[], stop: () => Promise<void> }>}
 *   `credentials` go to openStorage's options; `env` is for a child process (a service under test),
 *   whose SDK reads the standard variables. Nothing here changes this process's environment.
 */
export async function startS3Server({ bucket = 'rowhouse-test' } = {}) {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'rowhouse-s3-'));
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: bucket }],
  });
  // s3rver keeps the parts of a multipart upload in one directory per upload, and its uploads
  // directory per bucket is named by its store.
  const uploadsDir = (b) => server.store.getResourcePath(b, undefined, 'uploads');
  // Before all of s3rver's own middleware.
  server.middleware.unshift(async (ctx, next) => {
    // A browser's CORS preflight carries no signature: S3 answers it from the bucket's CORS rules alone.
    if (ctx.method === 'OPTIONS') return next();
    const refusal = verifySignatureV4(ctx.method, ctx.req.url, ctx.req.headers);
    if (refusal !== null) return answer(ctx, 403, refusal.code, refusal.message);
    // AbortMultipartUpload, which s3rver lacks (it answers 405): the parts are removed, as S3 does.
    if (ctx.method === 'DELETE' && typeof ctx.query.uploadId === 'string') {
      const [, b] = ctx.path.split('/');
      const id = ctx.query.uploadId;
      const dir = /^[0-9a-f]+$/.test(id) && b ? path.join(uploadsDir(b), id) : null;
      if (dir === null || !fs.existsSync(dir)) return answer(ctx, 404, 'NoSuchUpload', 'The specified upload does not exist.');
      fs.rmSync(dir, { recursive: true, force: true });
      ctx.status = 204;
      return undefined;
    }
    return next();
  });
  let address;
  try {
    address = await server.run();
  } catch (err) {
    fs.rmSync(directory, { recursive: true, force: true });
    throw err;
  }
  const endpoint = `http://127.0.0.1:${address.port}`;
  const spec = `s3://${bucket}?endpoint=${encodeURIComponent(endpoint)}&region=us-east-1&forcePathStyle=true`;
  return {
    endpoint,
    bucket,
    spec,
    credentials: { ...S3RVER_CREDENTIALS },
    env: { AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey },
    /** The multipart uploads begun and neither completed nor aborted. */
    pendingUploads() {
      const dir = uploadsDir(bucket);
      return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
    },
    async stop() {
      await server.close();
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}
