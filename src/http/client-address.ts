/** `::ffff:127.0.0.1` (IPv4 on a dual-stack socket) is the same client as `127.0.0.1`. */
export function normalizeAddress(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

/** The configured proxies whose X-Forwarded-* headers are believed, in normalized form. */
export function trustedProxySet(addresses: readonly string[]): ReadonlySet<string> {
  return new Set(addresses.map(normalizeAddress));
}

/**
 * The address a request comes from: the peer, or, when the peer is a trusted proxy, the
 * rightmost X-Forwarded-For hop that is not itself a trusted proxy (the leftmost hops are
 * the client's to write, so they are never believed).
 */
export function clientAddress(
  peer: string,
  forwardedFor: string | string[] | undefined,
  trustedProxies: ReadonlySet<string>,
): string {
  const address = normalizeAddress(peer);
  if (forwardedFor === undefined || !trustedProxies.has(address)) return address;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
  for (let i = hops.length - 1; i >= 0; i -= 1) {
    const hop = normalizeAddress(hops[i]?.trim() ?? '');
    if (hop !== '' && !trustedProxies.has(hop)) return hop;
  }
  return address;
}
