import { describe, expect, it } from 'vitest';
import { redisLayout } from '../../../../src/backends/redis/layout.js';

// The names the walk over pairs ending soon reads (backends/redis/expiring-pairs.ts): SCAN's
// pattern is loose (`*` matches braces and colons), so each name it returns is checked.

describe('the names of the subjects’ end indexes', () => {
  const layout = redisLayout('ag:');

  it('gives back the subject of its own index, whatever the subject holds', () => {
    for (const subject of ['alice', 'a:ends', 'x}:subject:y', 'ünï cödé'])
      expect(layout.endsSubject(layout.subjectEnds(subject)), subject).toBe(subject);
  });

  it('refuses a name under another tag than its subject’s, another prefix or another index', () => {
    const alice = layout.subjectEnds('alice');
    for (const name of [
      alice.replace(`{${layout.tagOf('alice')}}`, '{00000}'),
      `x${alice}`,
      layout.subjectPairs('alice'),
      layout.subjectActive('alice'),
      layout.bucket({ kind: 'subject', subject: 'alice:ends' }),
      redisLayout('other:').subjectEnds('alice'),
    ])
      expect(layout.endsSubject(name), name).toBeUndefined();
  });

  it('scans with a pattern that escapes a prefix’s glob characters', () => {
    expect(redisLayout('ag:').everySubjectEnds).toBe('ag:{*}:subject:*:ends');
    expect(redisLayout('a*b?[c]:').everySubjectEnds).toBe('a\\*b\\?\\[c\\]:{*}:subject:*:ends');
  });
});
