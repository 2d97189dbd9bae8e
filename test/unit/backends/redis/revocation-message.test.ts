import { describe, expect, it } from 'vitest';
import {
  parseRevocationMessage,
  unlockMessage,
} from '../../../../src/backends/redis/revocation-message.js';

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

  it('names a key, a username or a client network whose lockout an operator lifted', () => {
    expect(parseRevocationMessage('unlock:key:ak_1')).toEqual({
      unlock: { kind: 'key', key: 'ak_1' },
      publishedAtMs: undefined,
    });
    expect(parseRevocationMessage('unlock:username:carol 1795345200123')).toEqual({
      unlock: { kind: 'username', username: 'carol' },
      publishedAtMs: 1_795_345_200_123,
    });
    // An IPv6 network holds colons: all of them belong to it.
    expect(parseRevocationMessage('unlock:address:2001:db8::/64')).toEqual({
      unlock: { kind: 'address', network: '2001:db8::/64' },
      publishedAtMs: undefined,
    });
  });

  it('reads back every unlock message the CLI publishes', () => {
    for (const unlock of [
      { kind: 'key', key: 'ak_1' },
      { kind: 'username', username: 'carol' },
      { kind: 'address', network: '192.0.2.7' },
      { kind: 'address', network: '2001:db8::/64' },
    ] as const)
      expect(parseRevocationMessage(unlockMessage(unlock))).toEqual({
        unlock,
        publishedAtMs: undefined,
      });
  });

  it('ignores an unlock that names no kind it knows, or nothing', () => {
    for (const message of [
      'unlock:',
      'unlock:key:',
      'unlock:key',
      'unlock:subject:s',
      'unlock:address: 1',
    ])
      expect(parseRevocationMessage(message)).toBeUndefined();
  });
});
