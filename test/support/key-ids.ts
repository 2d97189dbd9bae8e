import { expect } from 'vitest';
import { parseKeyId, subjectTag } from '../../src/identity/key-id.js';

/** `id` is a self-describing id whose checksum holds and whose tag is `subject`'s. */
export function expectKeyIdOf(id: string | undefined, subject: string): void {
  expect(parseKeyId(id ?? ''), id).toEqual({ kind: 'tagged', tag: subjectTag(subject) });
}
