import { createHash, randomBytes } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A new key: `rh_` + 40 random base62 characters (CONTRACT §2). */
export function generateApiKey(): string {
  let out = 'rh_';
  while (out.length < 43) {
    for (const byte of randomBytes(64)) {
      // 248 = 4 × 62: bytes above it are dropped so every character is equally likely.
      if (byte < 248 && out.length < 43) out += BASE62[byte % 62];
    }
  }
  return out;
}

/** Keys are high-entropy random strings, so one SHA-256 is enough to store them safely. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** The start of a key, kept in clear so a person can tell their keys apart. */
export function apiKeyPrefix(key: string): string {
  return key.slice(0, 8);
}
