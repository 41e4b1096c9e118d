import { BlockList, isIP } from 'node:net';

/**
 * Addresses a webhook must not reach unless ROWHOUSE_WEBHOOK_ALLOW_PRIVATE=true (issue "Change
 * events", item 5): what lets a URL written by an API client probe the service's own host or
 * network. Loopback, "this network", link-local (169.254.0.0/16: the cloud metadata address),
 * private and shared (RFC 1918, RFC 6598), unique-local, multicast and the reserved ranges.
 */
const refused = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) {
  refused.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [
  ['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8], ['64:ff9b::', 96], ['2002::', 16],
] as const) {
  refused.addSubnet(net, bits, 'ipv6');
}

/** An IPv6 address that carries an IPv4 one (`::ffff:a.b.c.d`, `::a.b.c.d`): the IPv4 address it reaches. */
function embeddedIpv4(ip: string): string | null {
  const m = /^(?:0{0,4}:){0,5}(?:ffff:)?(?:0{0,4}:)?((?:\d{1,3}\.){3}\d{1,3})$/i.exec(ip) ?? /^::(?:ffff:)?(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip);
  if (m) return m[1];
  // ::ffff:7f00:1 is 127.0.0.1 written in hex.
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(ip);
  if (!hex) return null;
  const [hi, lo] = [parseInt(hex[1], 16), parseInt(hex[2], 16)];
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Whether `ip` (a literal address; a bracketed IPv6 host too) is one a webhook may not reach by default. */
export function isPrivateAddress(ip: string): boolean {
  const address = ip.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(address);
  if (family === 4) return refused.check(address, 'ipv4');
  if (family !== 6) return false;
  const v4 = embeddedIpv4(address);
  if (v4 !== null && isIP(v4) === 4) return refused.check(v4, 'ipv4');
  return refused.check(address, 'ipv6');
}

/** Whether a URL host is a literal IP address (IPv6 in brackets, as URL.hostname gives it). */
export function isIpLiteral(host: string): boolean {
  return isIP(host.replace(/^\[|\]$/g, '')) !== 0;
}
