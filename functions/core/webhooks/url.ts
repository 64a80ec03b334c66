import ipaddr from 'ipaddr.js';
import { isIP } from 'node:net';

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

const MAX_WEBHOOK_URL_LENGTH = 2048;

export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

// An allow-list, not a deny-list: an address is a target only when ipaddr.js (a maintained classification of the
// IANA special-purpose registries) puts it in no special range at all, which it calls `unicast`. Private,
// loopback, link-local, shared (CGNAT), unique-local, site-local, documentation, benchmarking, multicast,
// reserved and every transition range are therefore refused without being listed here, and a range the library
// learns about later is refused by an update, not by someone remembering to add it.

/**
 * IPv6 global unicast is 2000::/3 (RFC 4291): ipaddr.js calls `unicast` whatever matches none of its ranges,
 * which includes unassigned space such as ::/8 (where the deprecated IPv4-compatible ::a.b.c.d form lives), so
 * an IPv6 target must also be inside 2000::/3.
 */
const IPV6_GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');
/** NAT64's well-known prefix (RFC 6052): the last 32 bits are the IPv4 address the translator connects to. */
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR('64:ff9b::/96');

const isGlobalIpv4 = (address: ipaddr.IPv4): boolean => address.range() === 'unicast';

/**
 * True for an address on the public internet: IPv4 and IPv6 global unicast only.
 *
 * IPv6 forms that carry an IPv4 address: two are judged by the IPv4 address inside, because they reach exactly
 * that address and public hosts legitimately appear in them: IPv4-mapped ::ffff:a.b.c.d (a dual-stack socket
 * connects to a.b.c.d itself; getaddrinfo returns these with AI_V4MAPPED) and NAT64's well-known 64:ff9b::/96
 * (what a DNS64 resolver, such as Route 53 Resolver in an IPv6-only subnet, returns for an IPv4-only host). Every
 * other transition form is refused outright, whatever it embeds: the local-use NAT64 prefix 64:ff9b:1::/48 (RFC
 * 8215: its embedding and translator are the site's own, so the address alone says nothing about where it
 * leads), 6to4 2002::/16 and Teredo 2001::/32 (obsolete tunnels whose IPv4 part names a relay or a NAT, and
 * Teredo's is obfuscated), IPv4-compatible ::a.b.c.d (deprecated, outside 2000::/3) and SIIT ::ffff:0:a.b.c.d.
 * No webhook endpoint needs them, and refusing is the side to err on.
 */
export function isPublicAddress(address: string): boolean {
  if (isIP(address) === 0) return false;
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return false;
  }
  if (parsed.kind() === 'ipv4') return isGlobalIpv4(parsed as ipaddr.IPv4);
  const v6 = parsed as ipaddr.IPv6;
  if (v6.range() === 'ipv4Mapped') return isGlobalIpv4(v6.toIPv4Address());
  if (v6.match(NAT64_WELL_KNOWN)) return isGlobalIpv4(new ipaddr.IPv4(v6.toByteArray().slice(12)));
  return v6.range() === 'unicast' && v6.match(IPV6_GLOBAL_UNICAST);
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
  // A fully qualified name's final dot (`localhost.`) names the same host: checked without it.
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');
  if (isIP(host) !== 0) {
    return isPublicAddress(host)
      ? { ok: true, url }
      : {
          ok: false,
          reason: 'points at an address that is not global unicast (private, loopback, reserved...)',
        };
  }
  if (LOCAL_NAMES.test(host) || !host.includes('.')) {
    return { ok: false, reason: 'names a local host, not a public one' };
  }
  return { ok: true, url };
}
