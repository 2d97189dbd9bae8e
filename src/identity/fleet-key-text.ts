/** The fleet key's length as the gateway makes it; a configured one must be at least this. */
export const FLEET_KEY_BYTES = 32;

/** Base64 or base64url text, padded or not, and nothing else. */
const KEY_TEXT = /^[A-Za-z0-9+/_-]+={0,2}$/;

/**
 * The bytes of a fleet key written as text (base64 or base64url, as `openssl rand -base64 32`
 * prints it); undefined when the text is not that or holds fewer than 32 bytes. Buffer.from
 * skips what it cannot decode, so the text is checked first.
 */
export function decodeFleetKey(text: string): Buffer | undefined {
  const trimmed = text.trim();
  if (!KEY_TEXT.test(trimmed)) return undefined;
  const bytes = Buffer.from(trimmed.replaceAll('-', '+').replaceAll('_', '/'), 'base64');
  return bytes.length < FLEET_KEY_BYTES ? undefined : bytes;
}
