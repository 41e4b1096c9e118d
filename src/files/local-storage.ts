import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ByteLimit, checkKey, checkMaxBytes, type FileStorage } from './storage-common.ts';

/**
 * Writes in progress live here, under the storage root (so on its file system, and renaming one into
 * place is atomic) but apart from the objects: keys cannot have a dot-led segment, so no key names
 * this directory, and a leftover of a crash is never mistaken for an object.
 */
const PARTIAL_DIR = '.partial';

/**
 * A temp file untouched for this long is a crash's leftover, removed when storage opens. A live write
 * touches its file with every chunk, and Node's HTTP server gives a whole request 5 minutes by
 * default; the margin lets several instances share one directory safely.
 */
const STALE_PARTIAL_MS = 60 * 60 * 1000;

function errorCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

/** The errors that mean "no such object": the path or one of its parents is missing or is not a directory. */
function isAbsent(err: unknown): boolean {
  const code = errorCode(err);
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/** Makes a rename in `dir` durable. Some platforms cannot fsync a directory; there it is skipped. */
async function syncDirectory(dir: string): Promise<void> {
  let handle: fsp.FileHandle | undefined;
  try {
    handle = await fsp.open(dir, 'r');
    await handle.sync();
  } catch (err) {
    const code = errorCode(err);
    if (code !== 'EISDIR' && code !== 'EPERM' && code !== 'EINVAL' && code !== 'EBADF') throw err;
  } finally {
    await handle?.close();
  }
}

async function removeStalePartials(partialDir: string, now: number): Promise<void> {
  for (const name of await fsp.readdir(partialDir)) {
    const file = path.join(partialDir, name);
    try {
      const { mtimeMs } = await fsp.lstat(file);
      if (now - mtimeMs > STALE_PARTIAL_MS) await fsp.rm(file, { force: true, recursive: true });
    } catch (err) {
      if (!isAbsent(err)) throw err; // another instance removed it first
    }
  }
}

class LocalStorage implements FileStorage {
  readonly presigns = false;
  private readonly partialDir: string;

  constructor(private readonly root: string) {
    this.partialDir = path.join(root, PARTIAL_DIR);
  }

  /** The object's path; checkKey has made sure it stays under the root. */
  private pathOf(key: string): string {
    checkKey(key);
    return path.join(this.root, ...key.split('/'));
  }

  async write(key: string, body: Readable, maxBytes: number): Promise<number> {
    let target: string;
    try {
      target = this.pathOf(key);
      checkMaxBytes(maxBytes);
    } catch (err) {
      body.destroy();
      throw err;
    }
    const temp = path.join(this.partialDir, `${randomUUID()}.partial`);
    const limit = new ByteLimit(maxBytes);
    try {
      await fsp.mkdir(this.partialDir, { recursive: true }); // in case it was removed since opening
      // `wx`: the name is fresh; `flush`: the bytes are on disk before the rename makes them visible.
      await pipeline(body, limit, createWriteStream(temp, { flags: 'wx', flush: true }));
      await fsp.mkdir(path.dirname(target), { recursive: true });
      await fsp.rename(temp, target);
    } catch (err) {
      await fsp.rm(temp, { force: true });
      throw err;
    }
    await syncDirectory(path.dirname(target));
    return limit.bytes;
  }

  async read(key: string): Promise<{ size: number; body: Readable } | null> {
    const file = this.pathOf(key);
    let handle: fsp.FileHandle;
    try {
      handle = await fsp.open(file, 'r');
    } catch (err) {
      if (isAbsent(err)) return null;
      throw err;
    }
    // The size comes from the open file, so it matches the bytes streamed even if a write replaces
    // the object meanwhile (the rename leaves this file as it was).
    try {
      const stats = await handle.stat();
      if (!stats.isFile()) {
        await handle.close();
        return null;
      }
      // The stream closes the file when it ends or is destroyed.
      return { size: stats.size, body: handle.createReadStream() };
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  async stat(key: string): Promise<{ size: number; contentType: string | null } | null> {
    try {
      const stats = await fsp.stat(this.pathOf(key));
      return stats.isFile() ? { size: stats.size, contentType: null } : null;
    } catch (err) {
      if (isAbsent(err)) return null;
      throw err;
    }
  }

  /** Empty parent directories stay: removing one could race a write about to rename into it. */
  async delete(key: string): Promise<void> {
    const file = this.pathOf(key);
    try {
      await fsp.unlink(file);
    } catch (err) {
      if (isAbsent(err)) return;
      // A key naming a directory of other keys (EISDIR; EPERM on macOS) names no object.
      if (errorCode(err) === 'EISDIR' || errorCode(err) === 'EPERM') {
        const stats = await fsp.lstat(file).catch(() => null);
        if (stats?.isDirectory()) return;
      }
      throw err;
    }
  }

  async close(): Promise<void> {}
}

/** Storage in the directory `root` (created if missing), with crash leftovers older than an hour removed. */
export async function openLocalStorage(root: string): Promise<FileStorage> {
  const storage = new LocalStorage(root);
  const partialDir = path.join(root, PARTIAL_DIR);
  await fsp.mkdir(partialDir, { recursive: true });
  await removeStalePartials(partialDir, Date.now());
  return storage;
}
