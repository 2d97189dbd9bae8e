import { readFileSync } from 'node:fs';

/**
 * The local addresses on which some process of this machine listens on TCP `port`, read from
 * /proc/net/tcp and tcp6 (no connection made): `127.0.0.1`, `0.0.0.0`, `::1`, `::`, or the
 * kernel's hex for any other IPv6 address.
 */
export function listeningAddresses(port: number): string[] {
  const found: string[] = [];
  for (const family of ['tcp', 'tcp6'] as const) {
    let table: string;
    try {
      table = readFileSync(`/proc/net/${family}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of table.split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      // 0A: TCP_LISTEN.
      if (local === undefined || state !== '0A') continue;
      const [hex = '', portHex = ''] = local.split(':');
      if (Number.parseInt(portHex, 16) !== port) continue;
      found.push(family === 'tcp' ? ipv4(hex) : ipv6(hex));
    }
  }
  return found;
}

/** The kernel writes an IPv4 address as one 32-bit word in host (little-endian) order. */
function ipv4(hex: string): string {
  const bytes = hex.match(/../g) ?? [];
  return bytes
    .reverse()
    .map((byte) => Number.parseInt(byte, 16))
    .join('.');
}

function ipv6(hex: string): string {
  if (/^0{32}$/.test(hex)) return '::';
  if (hex === '00000000000000000000000001000000') return '::1';
  return hex;
}
