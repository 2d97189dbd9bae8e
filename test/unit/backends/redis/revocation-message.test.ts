import { describe, expect, it } from 'vitest';
import { parseRevocationMessage } from '../../../../src/backends/redis/revocation-message.js';

describe('a message of the revocation channel', () => {
  it('names a pair or a subject without a time, as writers of the earlier form publish it', () => {
    expect(parseRevocationMessage('key:ak_1')).toEqual({
      revocation: { kind: 'key', key: 'ak_1' },
      publishedAtMs: undefined,
    });
    expect(parseRevocationMessage('subject:alice@example.com')).toEqual({
      revocation: { kind: 'subject', subject: 'alice@example.com' },
      publishedAtMs: undefined,
    });
  });

  it('carries its publish time in Unix milliseconds after one space', () => {
    expect(parseRevocationMessage('key:ak_1 1795345200123')).toEqual({
      revocation: { kind: 'key', key: 'ak_1' },
      publishedAtMs: 1_795_345_200_123,
    });
    // A subject may hold colons; the first space ends it all the same.
    expect(parseRevocationMessage('subject:tenant:alice 1795345200123.456')).toEqual({
      revocation: { kind: 'subject', subject: 'tenant:alice' },
      publishedAtMs: 1_795_345_200_123.456,
    });
  });

  it('still revokes what it names when the time after it does not read as one', () => {
    for (const time of ['soon', '-5', '1e12', '', ' 1795345200123', '1795345200123 x'])
      expect(parseRevocationMessage(`key:ak_1 ${time}`)).toEqual({
        revocation: { kind: 'key', key: 'ak_1' },
        publishedAtMs: undefined,
      });
  });

  it('is ignored when it names neither a pair nor a subject', () => {
    for (const message of ['', 'ak_1', 'keys:ak_1 1795345200123', 'user:alice'])
      expect(parseRevocationMessage(message)).toBeUndefined();
  });
});
