import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { generateKeyPair } from '../../../src/credentials/generate-key-pair.js';
import { SUBJECT } from '../../../src/identity/identity-formats.js';
import { parseKeyId, subjectTag } from '../../../src/identity/key-id.js';

const subject = fc.stringMatching(SUBJECT.pattern);

describe('generateKeyPair', () => {
  it('makes a key id that parses back to its subject’s shard tag, for any subject', () => {
    fc.assert(
      fc.property(subject, (s) => {
        const { key } = generateKeyPair(s);
        expect(parseKeyId(key)).toEqual({ kind: 'tagged', tag: subjectTag(s) });
      }),
    );
  });

  it('makes a new random part and secret each time', () => {
    const pairs = Array.from({ length: 100 }, () => generateKeyPair('alice'));
    expect(new Set(pairs.map((p) => p.key)).size).toBe(100);
    expect(new Set(pairs.map((p) => p.secret)).size).toBe(100);
    for (const { secret } of pairs) expect(secret).toMatch(/^[0-9A-Za-z]{48}$/);
  });
});
