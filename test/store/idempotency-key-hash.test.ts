import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { it } from 'node:test';
import { keyHashOf } from '../../src/store/idempotency-key-hash.ts';

/**
 * The hash a kept answer is found by must stay what migration 20 wrote and every record since
 * holds: the first 8 bytes of SHA-256 of "keyId\nkey", read as a signed big-endian 64-bit number.
 * (It is made from the hex digest, which is cheaper: the sign and leading zeros must survive.)
 */
it('keyHashOf is the first 8 bytes of SHA-256 of the key id and key, signed big-endian', () => {
  const seen = { negative: 0, positive: 0, leadingZero: 0 };
  for (let i = 0; i < 5000; i++) {
    const keyId = `01JD5Z8X0A1B2C3D4E5F6G${String(i % 97).padStart(4, '0')}`;
    const key = i % 3 === 0 ? `order-${i}` : `${i} ~!"#$%&'()*+,-./:;<=>?@[\\]^_\`{|}`;
    const digest = createHash('sha256').update(`${keyId}\n${key}`).digest();
    const expected = digest.readBigInt64BE(0);
    assert.equal(keyHashOf(keyId, key), expected, `${keyId} ${key}`);
    if (expected < 0n) seen.negative++;
    else seen.positive++;
    if (digest[0] < 16) seen.leadingZero++;
  }
  // Both signs and digests beginning with a zero digit were among them.
  assert.ok(seen.negative > 0 && seen.positive > 0 && seen.leadingZero > 0, JSON.stringify(seen));
});
