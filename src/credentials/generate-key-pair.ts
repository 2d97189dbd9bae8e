import { randomInt } from 'node:crypto';
import { BASE62, formatKeyId, KEY_ID_RANDOM_LENGTH, subjectTag } from '../identity/key-id.js';

/** Uniform base62 from the CSPRNG (randomInt avoids modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i += 1) out += BASE62[randomInt(62)];
  return out;
}

/**
 * A new pair for `subject`. Key: a self-describing id carrying the subject's shard tag
 * (identity/key-id.ts). Secret: 48 base62 (~285 bits), well under bcrypt's 72 bytes.
 */
export function generateKeyPair(subject: string): { key: string; secret: string } {
  return {
    key: formatKeyId(subjectTag(subject), randomBase62(KEY_ID_RANDOM_LENGTH)),
    secret: randomBase62(48),
  };
}
