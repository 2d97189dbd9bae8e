import { describe, expect, it } from 'vitest';
import {
  clientAddress,
  normalizeAddress,
  resolveClientAddress,
} from '../../../src/http/client-address.js';
import { createTrustedProxies } from '../../../src/http/ip-network.js';

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
  const trusted = createTrustedProxies(['10.0.0.1', '10.0.0.2']);
  const from = (peer: string, forwardedFor?: string | string[]) =>
    clientAddress(peer, forwardedFor, trusted)?.text;

  it('is the peer when the peer is not a trusted proxy, whatever X-Forwarded-For says', () => {
    expect(from('::ffff:192.0.2.7', '198.51.100.1')).toBe('192.0.2.7');
  });

  it('is the rightmost untrusted X-Forwarded-For hop behind trusted proxies', () => {
    expect(from('10.0.0.1', '1.1.1.1, 198.51.100.9, 10.0.0.2')).toBe('198.51.100.9');
    expect(from('10.0.0.1', ['1.1.1.1, 198.51.100.9', '10.0.0.2'])).toBe('198.51.100.9');
  });

  it('is the peer when a trusted proxy sent no X-Forwarded-For', () => {
    expect(from('10.0.0.1', undefined)).toBe('10.0.0.1');
  });

  it('trusts proxies by CIDR range', () => {
    const ranges = createTrustedProxies(['10.0.0.0/8', 'fd00::/8']);
    expect(clientAddress('10.20.30.40', '198.51.100.9, 10.9.9.9', ranges)?.text).toBe(
      '198.51.100.9',
    );
    expect(clientAddress('fd12::1', '2001:db8::9', ranges)?.text).toBe('2001:db8::9');
  });

  it('never takes a hop that is not an IP address: the nearest trusted hop is the client', () => {
    expect(from('10.0.0.1', '198.51.100.9, 203.0.113.5:4711')).toBe('10.0.0.1');
    expect(from('10.0.0.1', '198.51.100.9, [2001:db8::1]:443')).toBe('10.0.0.1');
    expect(from('10.0.0.1', '198.51.100.9, garbage, 10.0.0.2')).toBe('10.0.0.2');
    expect(from('10.0.0.1', 'unknown')).toBe('10.0.0.1');
  });

  it('skips empty list elements (RFC 9110 §5.6.1)', () => {
    expect(from('10.0.0.1', '198.51.100.9, ,')).toBe('198.51.100.9');
  });

  it('writes a forwarded IPv6 client in one canonical form, and an IPv4-mapped one as IPv4', () => {
    expect(from('10.0.0.1', '2001:DB8:0:0::0001')).toBe('2001:db8::1');
    expect(from('10.0.0.1', '::ffff:198.51.100.9')).toBe('198.51.100.9');
  });
});

describe('resolveClientAddress', () => {
  const addressing = {
    trusted: createTrustedProxies(['127.0.0.1']),
    ipv4Prefix: 32,
    ipv6Prefix: 64,
  };

  it('counts IPv6 clients by their /64 and keeps their own address for the log', () => {
    for (const address of ['2001:db8:aa:bb::1', '2001:db8:aa:bb::37', '2001:db8:aa:bb:ff::ff'])
      expect(resolveClientAddress('127.0.0.1', address, addressing)).toEqual({
        address,
        network: '2001:db8:aa:bb::/64',
      });
  });

  it('counts an IPv4 client by its address alone by default, by a shorter prefix when told', () => {
    expect(resolveClientAddress('192.0.2.7', undefined, addressing)).toEqual({
      address: '192.0.2.7',
      network: '192.0.2.7',
    });
    expect(resolveClientAddress('192.0.2.7', undefined, { ...addressing, ipv4Prefix: 24 })).toEqual(
      { address: '192.0.2.7', network: '192.0.2.0/24' },
    );
  });

  it('keeps a peer that is no address (a closed socket) as it is', () => {
    expect(resolveClientAddress('', undefined, addressing)).toEqual({ address: '', network: '' });
  });
});
