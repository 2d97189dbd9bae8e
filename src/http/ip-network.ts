import { BlockList, isIPv4, isIPv6, SocketAddress } from 'node:net';

export type IpFamily = 'ipv4' | 'ipv6';

/** An IP address in its one canonical spelling. */
export interface IpAddress {
  readonly family: IpFamily;
  readonly text: string;
}

/**
 * `text` as an IP address in canonical form, or undefined when it is not exactly one (a port,
 * brackets, spaces or anything else make it garbage). IPv6 is written as RFC 5952 says (lower
 * case, the longest run of zero groups compressed, no zone); an IPv4-mapped IPv6 address
 * (`::ffff:192.0.2.1`, RFC 4291 §2.5.5.2) is the IPv4 client it carries. So one client has one
 * spelling, and its counters one key, however a proxy or a socket writes it.
 */
export function parseIp(text: string): IpAddress | undefined {
  // node:net's checks and its inet_ntop (through SocketAddress), rather than our own parsing.
  if (isIPv4(text)) return { family: 'ipv4', text };
  if (!isIPv6(text)) return undefined;
  const canonical = new SocketAddress({ address: text, family: 'ipv6' }).address;
  return canonical.startsWith('::ffff:') && canonical.includes('.')
    ? { family: 'ipv4', text: canonical.slice(7) }
    : { family: 'ipv6', text: canonical };
}

const BITS: Readonly<Record<IpFamily, number>> = { ipv4: 32, ipv6: 128 };

/**
 * The network of the first `prefix` bits of `address`: `<first address>/<prefix>`, or the
 * address alone when the prefix is all of it (a /32 IPv4 address keeps its plain spelling).
 */
export function networkOf(address: IpAddress, prefix: number): string {
  const bits = BITS[address.family];
  if (prefix >= bits) return address.text;
  const bytes = toBytes(address).map((byte, i) => {
    const kept = Math.min(8, Math.max(0, prefix - i * 8));
    return byte & (0xff << (8 - kept)) & 0xff;
  });
  return `${fromBytes(address.family, bytes)}/${prefix}`;
}

/** The peers whose X-Forwarded-For is believed. */
export interface TrustedProxies {
  /** `address` in canonical form (a socket's peer, or parseIp's text). */
  has(address: string): boolean;
}

/**
 * The trusted proxies of `server.trustedProxies`: addresses and CIDR ranges, IPv4 and IPv6
 * (an IPv4-mapped entry counts as IPv4, as its clients do). Host bits of a range are ignored.
 */
export function createTrustedProxies(entries: readonly string[]): TrustedProxies {
  // The default, no proxy: the hot path (every forwarded request asks) asks nothing of node:net.
  if (entries.length === 0) return { has: () => false };
  const list = new BlockList();
  for (const entry of entries) {
    const [text = '', bits] = entry.split('/');
    const ip = parseIp(text);
    if (ip === undefined) throw new Error(`server.trustedProxies: ${entry} is not an IP address`);
    const full = BITS[ip.family];
    // `::ffff:10.0.0.0/104` is 10.0.0.0/8.
    const mappedShift = ip.family === 'ipv4' && text.includes(':') ? 96 : 0;
    const prefix = bits === undefined ? full : Math.max(0, Number(bits) - mappedShift);
    if (prefix >= full) list.addAddress(ip.text, ip.family);
    else list.addSubnet(ip.text, prefix, ip.family);
  }
  return { has: (address) => list.check(address, address.includes(':') ? 'ipv6' : 'ipv4') };
}

/** The 4 or 16 bytes of a canonical address. */
function toBytes(address: IpAddress): number[] {
  if (address.family === 'ipv4') return address.text.split('.').map(Number);
  const groups = (part: string): number[] =>
    part === ''
      ? []
      : part.split(':').flatMap((group) => {
          if (!group.includes('.')) return [parseInt(group, 16)];
          // An IPv4 tail (`::1.2.3.4`): two groups.
          const [a = 0, b = 0, c = 0, d = 0] = group.split('.').map(Number);
          return [(a << 8) | b, (c << 8) | d];
        });
  const [head = '', tail] = address.text.split('::');
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const all = [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
  return all.flatMap((group) => [group >> 8, group & 0xff]);
}

function fromBytes(family: IpFamily, bytes: readonly number[]): string {
  if (family === 'ipv4') return bytes.join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2)
    groups.push((((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0)).toString(16));
  return new SocketAddress({ address: groups.join(':'), family: 'ipv6' }).address;
}
