import { hash } from 'node:crypto';

/**
 * The 64-bit number a kept answer is found by (rh_idempotency."keyHash", unique): the first 8 bytes
 * of SHA-256 of the API key's id and the Idempotency-Key. Its index entries are 8 bytes where the
 * (keyId, key) text pair's were 60 or more, so the index a keyed create inserts into at random stays
 * a fifth the size (docs/decisions.md "Kept answers found by a hash of their key"). Lookups still
 * compare keyId and key: two keys of one hash (about one chance in 10^7 among a million live keys)
 * never answer for each other; the second is answered 409 until the first's record expires.
 * Made by the one-shot `hash` as hex, its first 16 digits read as a signed 64-bit number (what
 * `createHash(…).digest().readBigInt64BE(0)` answers): a Hash object, or a Buffer answered, costs two
 * to three times as much (docs/decisions.md, "the keyed create's own work").
 */
export function keyHashOf(keyId: string, key: string): bigint {
  return BigInt.asIntN(64, BigInt(`0x${hash('sha256', `${keyId}\n${key}`, 'hex').slice(0, 16)}`));
}
