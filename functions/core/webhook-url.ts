import { BlockList, isIP } from 'node:net';

/**
 * Which webhook URLs a service may register, and which addresses a webhook may be posted to. Webhooks are
 * requests the deployment makes on a customer's behalf, so they must never reach the deployment's own network:
 * HTTPS to public addresses only. The local stack relaxes this (`allowPrivate`) so a developer can receive
 * webhooks on http://127.0.0.1.
 */
export interface WebhookTargetPolicy {
  /** Allow http:// and private, loopback and link-local targets (the local stack only). */
  allowPrivate: boolean;
}

export const MAX_WEBHOOK_URL_LENGTH = 2048;

export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

/** Ranges a webhook must never reach: private, loopback, link-local, unique-local, shared, reserved. */
const NON_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT (shared address space)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, including the instance metadata service 169.254.169.254
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and the broadcast address
] as const) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique-local (includes the metadata service's fd00:ec2::254)
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv6');
}

/** The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible or NAT64 (64:ff9b::/96) address. */
function embeddedIpv4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|::|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (!hex) return undefined;
  const high = parseInt(hex[1]!, 16);
  const low = parseInt(hex[2]!, 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/** True for an address on the public internet; false for private, loopback, link-local and reserved ones. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !NON_PUBLIC.check(address, 'ipv4');
  if (family === 6) {
    const v4 = embeddedIpv4(address);
    if (v4 !== undefined) return isIP(v4) === 4 && !NON_PUBLIC.check(v4, 'ipv4');
    return !NON_PUBLIC.check(address, 'ipv6');
  }
  return false;
}

/** Host names that always mean this machine or its private network, whatever DNS says. */
const LOCAL_NAMES = /(^|\.)(localhost|local|internal|localdomain|home\.arpa)$/i;

/**
 * Checks a webhook URL against the policy: scheme, no credentials, and a host that is not a private address
 * literal or a local name. A public host name can still resolve to a private address: the sender checks the
 * resolved addresses again when it connects.
 */
export function checkWebhookUrl(text: string, policy: WebhookTargetPolicy): UrlCheck {
  if (text.length > MAX_WEBHOOK_URL_LENGTH)
    return { ok: false, reason: `longer than ${MAX_WEBHOOK_URL_LENGTH} characters` };
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, reason: 'not a URL' };
  }
  const schemes = policy.allowPrivate ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol)) {
    return { ok: false, reason: policy.allowPrivate ? 'not an http(s) URL' : 'not an https:// URL' };
  }
  if (url.username || url.password) return { ok: false, reason: 'has credentials in it' };
  if (url.hash) return { ok: false, reason: 'has a #fragment' };
  if (policy.allowPrivate) return { ok: true, url };
  // The URL parser normalises IPv4 forms such as 0x7f.1 or 2130706433 to dotted quads; IPv6 comes bracketed.
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host) !== 0) {
    return isPublicAddress(host)
      ? { ok: true, url }
      : { ok: false, reason: 'points at a private, loopback or link-local address' };
  }
  if (LOCAL_NAMES.test(host) || !host.includes('.')) {
    return { ok: false, reason: 'names a local host, not a public one' };
  }
  return { ok: true, url };
}
