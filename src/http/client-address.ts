import type { ClientAddress } from '../identity/client-address.js';
import { networkOf, parseIp, type IpAddress, type TrustedProxies } from './ip-network.js';

/** `::ffff:127.0.0.1` (IPv4 on a dual-stack socket) is the same client as `127.0.0.1`. */
export function normalizeAddress(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

/** How client addresses are read and counted: `server.trustedProxies`, `server.clientNetworks`. */
export interface ClientAddressing {
  readonly trusted: TrustedProxies;
  readonly ipv4Prefix: number;
  readonly ipv6Prefix: number;
}

/**
 * The address a request comes from, in canonical form (see parseIp): the peer, or, while the
 * address reached is a trusted proxy, the next X-Forwarded-For hop from the right, so the
 * rightmost hop that is not a trusted proxy (the hops left of it are the client's to write,
 * so they are never believed). A hop that is not an IP address (a port appended, brackets,
 * garbage) ends the walk at the nearest trusted hop: anything left of garbage is the client's
 * to write too. Empty list elements are skipped (RFC 9110 §5.6.1). Undefined when the peer
 * is no address (a socket already closed).
 */
export function clientAddress(
  peer: string,
  forwardedFor: string | string[] | undefined,
  trusted: TrustedProxies,
): IpAddress | undefined {
  let address = parseIp(normalizeAddress(peer));
  if (address === undefined || forwardedFor === undefined || !trusted.has(address.text))
    return address;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
  for (let i = hops.length - 1; i >= 0; i -= 1) {
    const hop = hops[i]?.trim() ?? '';
    if (hop === '') continue;
    const ip = parseIp(hop);
    if (ip === undefined) return address;
    address = ip;
    if (!trusted.has(address.text)) return address;
  }
  return address;
}

/**
 * The client's address and the network its per-address counters count: with the defaults an
 * IPv4 address alone (/32) and the /64 of an IPv6 address, the least any one subscriber is
 * given (RFC 6177), so a client cannot step around the lockout or an address limit by
 * cycling through its own addresses.
 */
export function resolveClientAddress(
  peer: string,
  forwardedFor: string | string[] | undefined,
  addressing: ClientAddressing,
): ClientAddress {
  const address = clientAddress(peer, forwardedFor, addressing.trusted);
  if (address === undefined) return { address: peer, network: peer };
  const prefix = address.family === 'ipv4' ? addressing.ipv4Prefix : addressing.ipv6Prefix;
  return { address: address.text, network: networkOf(address, prefix) };
}
