import { describe, expect, it } from 'vitest';
import {
  clientAddress,
  normalizeAddress,
  trustedProxySet,
} from '../../../src/http/client-address.js';

describe('normalizeAddress', () => {
  it.each([
    ['::ffff:127.0.0.1', '127.0.0.1'],
    ['::ffff:10.0.0.1', '10.0.0.1'],
    ['127.0.0.1', '127.0.0.1'],
    ['::1', '::1'],
    ['::ffff:abcd', '::ffff:abcd'],
    ['2001:db8::1', '2001:db8::1'],
  ])('normalises %s to %s', (input, expected) => {
    expect(normalizeAddress(input)).toBe(expected);
  });
});

describe('clientAddress', () => {
  const trusted = new Set(['10.0.0.1', '10.0.0.2']);

  it('is the peer when the peer is not a trusted proxy, whatever X-Forwarded-For says', () => {
    expect(clientAddress('::ffff:192.0.2.7', '198.51.100.1', trusted)).toBe('192.0.2.7');
  });

  it('is the rightmost untrusted X-Forwarded-For hop behind trusted proxies', () => {
    expect(clientAddress('10.0.0.1', '1.1.1.1, 198.51.100.9, 10.0.0.2', trusted)).toBe(
      '198.51.100.9',
    );
  });

  it('is the peer when a trusted proxy sent no X-Forwarded-For', () => {
    expect(clientAddress('10.0.0.1', undefined, trusted)).toBe('10.0.0.1');
  });
});

describe('trustedProxySet', () => {
  it('holds IPv4-mapped entries in their plain IPv4 form', () => {
    expect([...trustedProxySet(['::ffff:10.0.0.1', '::1'])]).toEqual(['10.0.0.1', '::1']);
  });
});
