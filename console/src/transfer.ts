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

/** The encoding an import file seems to be in, from its first bytes: a UTF-8 BOM; else UTF-8 if it decodes as such; else Shift_JIS. */
export function sniffEncoding(head: Uint8Array): { encoding: 'utf8' | 'utf8Bom' | 'shiftJis'; note: string } {
  if (head.length >= 3 && head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf) return { encoding: 'utf8Bom', note: 'A UTF-8 byte order mark was found: UTF-8.' };
  try {
    // A cut in the middle of a character at the end of the sample is not a reason to doubt UTF-8.
    new TextDecoder('utf-8', { fatal: true }).decode(head.subarray(0, lastWhole(head)));
    return { encoding: 'utf8', note: 'The file reads as UTF-8.' };
  } catch {
    return { encoding: 'shiftJis', note: 'The file is not UTF-8: Shift_JIS assumed.' };
  }
}

function lastWhole(b: Uint8Array): number {
  let end = b.length;
  for (let i = b.length - 1; i >= 0 && i >= b.length - 4; i--) {
    if ((b[i] & 0xc0) === 0xc0) return i; // a lead byte near the end: stop before it
    if ((b[i] & 0x80) === 0) break;
  }
  return end;
}
