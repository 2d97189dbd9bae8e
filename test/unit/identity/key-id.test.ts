import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KEY_ID } from '../../../src/identity/identity-formats.js';
import {
  BASE62,
  formatKeyId,
  parseKeyId,
  subjectTag,
  TAGGED_KEY_ID_LENGTH,
  TAGGED_KEY_ID_SOURCE,
} from '../../../src/identity/key-id.js';
import { readDoc } from '../../support/markdown.js';

/**
 * Written by PHP 8.2 as docs/redis-layout.md tells a web application to (`crc32`, base62 by hand), for
 * subject `alice` and the random part `7FqR0cX1mZ9pLw2sTn4vYb8d`: a literal, so that the
 * gateway and another language are shown to agree on the tag and the checksum.
 */
const PHP_WRITTEN = 'ak_2bd80_7FqR0cX1mZ9pLw2sTn4vYb8d1wgUYX';

/** Every character a key id may hold (KEY_ID): what a typo can turn a character into. */
const KEY_ID_CHARACTERS = `${BASE62}_-`;

const tag = fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 5, maxLength: 5 });
const random = fc.string({ unit: fc.constantFrom(...BASE62), minLength: 24, maxLength: 24 });
const keyId = fc.tuple(tag, random).map(([t, r]) => formatKeyId(t, r));

/** Each id that differs from `id` in exactly one character, with where it differs. */
function everySubstitution(id: string): { at: number; changed: string }[] {
  const out: { at: number; changed: string }[] = [];
  for (let at = 0; at < id.length; at += 1)
    for (const char of KEY_ID_CHARACTERS)
      if (char !== id[at]) out.push({ at, changed: id.slice(0, at) + char + id.slice(at + 1) });
  return out;
}

describe('subjectTag', () => {
  it('is the first five hex digits of SHA-256 of the subject, as docs/redis-layout.md’s shell line computes', () => {
    // printf %s alice | sha256sum | cut -c1-5
    expect(subjectTag('alice')).toBe('2bd80');
    // UTF-8 bytes, so a subject is tagged alike in every language.
    expect(subjectTag('bob@example.com')).toMatch(/^[0-9a-f]{5}$/);
  });
});

describe('formatKeyId', () => {
  it('writes the id PHP writes for the same subject and random part', () => {
    expect(formatKeyId(subjectTag('alice'), '7FqR0cX1mZ9pLw2sTn4vYb8d')).toBe(PHP_WRITTEN);
  });

  it('makes ids of 39 characters that KEY_ID accepts and that parse back to their tag', () => {
    fc.assert(
      fc.property(tag, random, (t, r) => {
        const id = formatKeyId(t, r);
        expect(id).toHaveLength(TAGGED_KEY_ID_LENGTH);
        expect(KEY_ID.pattern.test(id)).toBe(true);
        expect(parseKeyId(id)).toEqual({ kind: 'tagged', tag: t });
      }),
    );
  });

  it('refuses a tag or a random part of the wrong shape with a TypeError', () => {
    const r = '7FqR0cX1mZ9pLw2sTn4vYb8d';
    for (const badTag of ['2bd8', '2bd800', '2BD80', '2bd8g'])
      expect(() => formatKeyId(badTag, r)).toThrow(TypeError);
    for (const badRandom of [r.slice(1), `${r}x`, `${r.slice(1)}_`])
      expect(() => formatKeyId('2bd80', badRandom)).toThrow(TypeError);
  });
});

describe('parseKeyId', () => {
  it('reads an id PHP wrote as tagged with its subject’s tag', () => {
    expect(parseKeyId(PHP_WRITTEN)).toEqual({ kind: 'tagged', tag: '2bd80' });
  });

  it('takes ids without the new form as untagged: earlier generated ids, ids another service chose', () => {
    for (const id of [
      'ak_aliceAAAAAAAAAAAAAAAAAAAA', // `ak_` + 24, what the gateway made before
      'web-app-key-1',
      'Aladdin',
      PHP_WRITTEN.slice(0, -1), // one short, one long: not the new form's length
      `${PHP_WRITTEN}X`,
      `bk_${PHP_WRITTEN.slice(3)}`, // the new form's length without its prefix
    ])
      expect(parseKeyId(id), id).toEqual({ kind: 'untagged' });
  });

  it('takes an id of the new length and prefix that is not a valid one as malformed', () => {
    const body = PHP_WRITTEN.slice(0, -6);
    for (const id of [
      `${body}000000`, // a guessed checksum
      `${body}zzzzzz`, // a six-digit number above 2^32, which no CRC32 gives
      PHP_WRITTEN.replace('2bd80', '2BD80'), // the tag is lowercase hex only
      PHP_WRITTEN.replace('ak_2bd80_', 'ak_2bd80-'),
      `ak_${'-'.repeat(TAGGED_KEY_ID_LENGTH - 3)}`,
    ])
      expect(parseKeyId(id), id).toEqual({ kind: 'malformed' });
  });

  it('catches every single-character change of an id: malformed after the prefix, untagged in it, never tagged', () => {
    // Exhaustive for a sample of ids: all 39 positions × every other KEY_ID character.
    fc.assert(
      fc.property(keyId, (id) => {
        for (const { at, changed } of everySubstitution(id))
          expect(parseKeyId(changed).kind, changed).toBe(at < 3 ? 'untagged' : 'malformed');
      }),
      { numRuns: 50 },
    );
  });

  it('catches every swap of two different neighbouring characters', () => {
    fc.assert(
      fc.property(keyId, (id) => {
        for (let at = 0; at + 1 < id.length; at += 1) {
          if (id[at] === id[at + 1]) continue;
          const swapped = id.slice(0, at) + id.charAt(at + 1) + id.charAt(at) + id.slice(at + 2);
          expect(parseKeyId(swapped).kind, swapped).not.toBe('tagged');
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('TAGGED_KEY_ID_SOURCE, the secret scanners’ pattern', () => {
  const pattern = new RegExp(TAGGED_KEY_ID_SOURCE, 'g');

  it('finds every self-describing id in surrounding text, and only the ids', () => {
    fc.assert(
      fc.property(keyId, keyId, (a, b) => {
        const text = `curl -u ${a}:s3cret https://x\n{"key":"${b}","label":"ci"} ${a}.`;
        expect(text.match(pattern)).toEqual([a, b, a]);
      }),
    );
  });

  it('finds neither earlier ids nor an id run into other word characters', () => {
    const text = `ak_aliceAAAAAAAAAAAAAAAAAAAA x${PHP_WRITTEN} ${PHP_WRITTEN}0 ${PHP_WRITTEN}_`;
    expect(text.match(pattern)).toBeNull();
  });

  it('is the pattern docs/redis-layout.md gives', () => {
    const doc = readDoc('docs/redis-layout.md');
    expect(doc.includes(TAGGED_KEY_ID_SOURCE), TAGGED_KEY_ID_SOURCE).toBe(true);
  });
});
