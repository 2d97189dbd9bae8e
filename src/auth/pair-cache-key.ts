import { hash, randomInt } from 'node:crypto';

/**
 * The id a pair is cached under: HMAC-SHA256's construction (RFC 2104,
 * H(K ^ opad || H(K ^ ipad || m))) under a per-process random key, the inner digest
 * hex-encoded, computed with two one-shot hashes. It runs on every cached request:
 * crypto.hash() needs no Hmac object and costs about 1.8 µs here, against 4.5 µs for
 * createHmac() with a KeyObject (23 µs with a raw key, which it re-imports on every call).
 * The key's bytes are below 0x80 (448 random bits) so that the pads are ASCII and the
 * one-shot hash, which encodes strings as UTF-8, hashes exactly those bytes.
 *
 * The same encoded bytes always decode to the same pair, and only a verified pair is ever
 * stored, so a hit under the encoded form is a hit for exactly that pair.
 */
export function createCacheKeyFunction(): (encoded: string) => string {
  const key = Array.from({ length: 64 }, () => randomInt(128));
  const pad = (mask: number): string => String.fromCharCode(...key.map((byte) => byte ^ mask));
  const inner = pad(0x36);
  const outer = pad(0x5c);
  // The 32 digest bytes as a one-byte ('binary', i.e. latin1) string: 12 bytes less per
  // cached pair than base64.
  return (encoded) => hash('sha256', outer + hash('sha256', inner + encoded, 'hex'), 'binary');
}
