import { randomInt } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Uniform base62 from the CSPRNG (randomInt avoids modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i += 1) out += BASE62[randomInt(62)];
  return out;
}

/** Key: public id `ak_` + 24 base62. Secret: 48 base62 (~285 bits), well under bcrypt's 72 bytes. */
export function generateKeyPair(): { key: string; secret: string } {
  return { key: `ak_${randomBase62(24)}`, secret: randomBase62(48) };
}
