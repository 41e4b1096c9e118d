/**
 * Where the console sends an upload's bytes (step 2 of CONTRACT §8's flow), checked by the URL's
 * origin (pure: no DOM, so the suite's Node tests can import it). Bytes go only to the service
 * itself (its own URLs, named by its public URL or by this page's origin, are fetched from this
 * page's origin, which the CSP's connect-src 'self' allows) or to the files' S3 bucket, the one other
 * origin the page's CSP names; the service writes both origins into the page (console-routes.ts).
 * An upload URL anywhere else is refused here, with what it named, before a byte is sent.
 */

export interface UploadOrigins {
  /** This page's origin. */
  page: string;
  /** The service's public origin (ROWHOUSE_PUBLIC_URL), when the page names it. */
  service: string | null;
  /** The files' bucket's origin (S3 storage), when the page names one. */
  bucket: string | null;
}

/** The URL to PUT the bytes to: this page's path for the service's own URLs, the bucket's URL as given; else an Error saying why not. */
export function uploadTarget(url: string, origins: UploadOrigins): string {
  let u: URL;
  try {
    u = new URL(url, origins.page);
  } catch {
    throw new Error(`Not uploaded: the service gave an upload URL that is not a URL (${url}).`);
  }
  if (u.origin === origins.page || u.origin === origins.service) return u.pathname + u.search;
  if (origins.bucket !== null && u.origin === origins.bucket) return u.href;
  const allowed = [origins.page, origins.service, origins.bucket].filter((o, i, all): o is string => o !== null && all.indexOf(o) === i);
  throw new Error(
    `Not uploaded: the upload URL names ${u.origin}, which is neither this service nor its files' bucket (${allowed.join(', ')}), so the file was not sent there. ` +
      'Check the service’s ROWHOUSE_STORAGE and ROWHOUSE_PUBLIC_URL.',
  );
}
