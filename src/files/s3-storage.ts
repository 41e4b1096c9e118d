import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { S3Client } from '@aws-sdk/client-s3';
import { ByteLimit, checkKey, checkMaxBytes, type FileStorage, FileTooLarge } from './storage-common.ts';

/** A parsed `s3://` storage spec. */
export interface S3Location {
  bucket: string;
  /** Prepended to every key with a `/`; '' for none. */
  prefix: string;
  /** An S3-compatible server's URL; undefined for AWS itself. */
  endpoint: string | undefined;
  region: string;
  /** `http://host/bucket/key` rather than `http://bucket.host/key`: what most S3-compatible servers need. */
  forcePathStyle: boolean;
}

export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/**
 * Parts of a write larger than one part go up as a multipart upload; memory holds about
 * (queue + 1) parts whatever the file's size. 5 MiB is S3's smallest part.
 */
const PART_BYTES = 5 * 1024 * 1024;
const PART_QUEUE = 2;

function errorName(err: unknown): string | undefined {
  return (err as { name?: unknown } | null)?.name as string | undefined;
}

/**
 * Storage in a bucket through the AWS SDK, which is loaded here, on the first s3:// open, and never
 * by a service on local disk.
 */
export async function openS3Storage(location: S3Location, credentials?: S3Credentials): Promise<FileStorage> {
  const [s3, { Upload }, { getSignedUrl }] = await Promise.all([
    import('@aws-sdk/client-s3'),
    import('@aws-sdk/lib-storage'),
    import('@aws-sdk/s3-request-presigner'),
  ]);
  const client: S3Client = new s3.S3Client({
    region: location.region,
    endpoint: location.endpoint,
    forcePathStyle: location.forcePathStyle,
    credentials,
    // Since SDK 3.729 the default (WHEN_SUPPORTED) signs a CRC32 into every presigned PUT URL, and
    // with no body at signing time it is the empty body's: S3 then refuses every real upload through
    // the URL (aws-sdk-js-v3#6994). Requests also carry checksum trailers that many S3-compatible
    // servers do not understand. Checksums only where an operation requires one.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const Bucket = location.bucket;
  const objectKey = (key: string): string => {
    checkKey(key);
    return location.prefix === '' ? key : `${location.prefix}/${key}`;
  };

  return {
    presigns: true,

    async write(key: string, body: Readable, maxBytes: number): Promise<number> {
      let Key: string;
      try {
        Key = objectKey(key);
        checkMaxBytes(maxBytes);
      } catch (err) {
        body.destroy();
        throw err;
      }
      // The length is unknown until the body ends, and PutObject needs it first: Upload sends one
      // PutObject for a body of one part, else a multipart upload, which it aborts on any failure. An
      // object appears only when the upload completes, so a failed write leaves none (and an object
      // already under the key as it was).
      const limit = new ByteLimit(maxBytes);
      const upload = new Upload({ client, params: { Bucket, Key, Body: limit }, partSize: PART_BYTES, queueSize: PART_QUEUE });
      const [fed, uploaded] = await Promise.allSettled([
        pipeline(body, limit),
        upload.done().catch((err: unknown) => {
          limit.destroy(); // Upload stopped reading: let the pipeline end too.
          throw err;
        }),
      ]);
      if (fed.status === 'rejected' && fed.reason instanceof FileTooLarge) throw fed.reason;
      if (uploaded.status === 'rejected') throw uploaded.reason;
      if (fed.status === 'rejected') throw fed.reason;
      return limit.bytes;
    },

    async read(key: string): Promise<{ size: number; body: Readable } | null> {
      try {
        const out = await client.send(new s3.GetObjectCommand({ Bucket, Key: objectKey(key) }));
        if (!(out.Body instanceof Readable)) throw new Error('The S3 client answered without a Node stream');
        return { size: out.ContentLength ?? 0, body: out.Body };
      } catch (err) {
        if (errorName(err) === 'NoSuchKey') return null;
        throw err;
      }
    },

    async stat(key: string): Promise<{ size: number; contentType: string | null } | null> {
      try {
        const out = await client.send(new s3.HeadObjectCommand({ Bucket, Key: objectKey(key) }));
        return { size: out.ContentLength ?? 0, contentType: out.ContentType ?? null };
      } catch (err) {
        // A HEAD response has no body to name the error: every 404 is NotFound.
        if (errorName(err) === 'NotFound' || errorName(err) === 'NoSuchKey') return null;
        throw err;
      }
    },

    async copy(from: string, to: string): Promise<void> {
      // Within the bucket, by S3 itself; the type and other metadata go along (MetadataDirective COPY).
      await client.send(new s3.CopyObjectCommand({ Bucket, Key: objectKey(to), CopySource: encodeURI(`${Bucket}/${objectKey(from)}`) }));
    },

    async delete(key: string): Promise<void> {
      // S3 answers 204 whether or not the object existed.
      await client.send(new s3.DeleteObjectCommand({ Bucket, Key: objectKey(key) }));
    },

    /**
     * The client sends its own Content-Type, which S3 keeps (stat reads it back). The URL does not
     * bound the size: check stat's size before accepting the object.
     */
    async uploadUrl(key: string, expiresInSeconds: number): Promise<string> {
      return getSignedUrl(client, new s3.PutObjectCommand({ Bucket, Key: objectKey(key) }), { expiresIn: expiresInSeconds });
    },

    /** The response headers are query parameters under the signature, so the URL's holder cannot change them. */
    async downloadUrl(
      key: string,
      o: { contentType: string; disposition: string; expiresInSeconds: number },
    ): Promise<string> {
      const command = new s3.GetObjectCommand({
        Bucket,
        Key: objectKey(key),
        ResponseContentType: o.contentType,
        ResponseContentDisposition: o.disposition,
      });
      return getSignedUrl(client, command, { expiresIn: o.expiresInSeconds });
    },

    async close(): Promise<void> {
      client.destroy();
    },
  };
}
