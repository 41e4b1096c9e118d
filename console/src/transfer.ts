/**
 * Sending a file's bytes with a progress bar: fetch reports no upload progress, XMLHttpRequest does.
 * Used for the file upload's PUT (step 2 of CONTRACT §8's flow) and for imports. Same origin only
 * (the page's CSP: connect-src 'self').
 */
import { ApiError } from './api.ts';

export function sendWithProgress(method: string, url: string, body: Blob, headers: Record<string, string>, onProgress: (fraction: number) => void): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, url);
    for (const [k, v] of Object.entries(headers)) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable && e.total > 0) onProgress(e.loaded / e.total);
    };
    xhr.onerror = () => reject(new ApiError(0, 'The service cannot be reached'));
    xhr.onload = () => {
      let parsed: unknown;
      try {
        parsed = xhr.responseText ? JSON.parse(xhr.responseText) : undefined;
      } catch {
        parsed = undefined;
      }
      if (xhr.status >= 200 && xhr.status < 300) {
        onProgress(1);
        return resolve(parsed);
      }
      const e = (parsed ?? {}) as { message?: unknown; details?: unknown };
      reject(new ApiError(xhr.status, typeof e.message === 'string' ? e.message : `${xhr.status} ${xhr.statusText}`, Array.isArray(e.details) ? e.details : []));
    };
    xhr.send(body);
  });
}

/** A progress bar with its label (a native <progress>: its value is announced). */
export function percent(fraction: number): number {
  return Math.round(Math.max(0, Math.min(1, fraction)) * 100);
}

