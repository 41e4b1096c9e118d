import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Webhook signatures (issue "Change events", item 3), in the scheme Stripe made common:
 * `Rowhouse-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" keyed with the flow's secret>`.
 * The time is signed with the body, so a receiver that refuses old times refuses replays.
 */

export function signature(secret: string, body: string, unixSeconds: number): string {
  const mac = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}

/**
 * A receiver's check, as docs/api.md shows it: the header's MAC over its time and the raw body, and
 * the time within `toleranceSeconds` of now.
 */
export function verifySignature(header: string, body: string, secret: string, toleranceSeconds = 300, now = Date.now()): boolean {
  const parts = new Map(header.split(',').map((p) => p.split('=', 2) as [string, string]));
  const t = Number(parts.get('t'));
  const v1 = parts.get('v1') ?? '';
  if (!Number.isInteger(t) || Math.abs(now / 1000 - t) > toleranceSeconds || !/^[0-9a-f]{64}$/.test(v1)) return false;
  const expected = createHmac('sha256', secret).update(`${t}.${body}`).digest();
  return timingSafeEqual(expected, Buffer.from(v1, 'hex'));
}
