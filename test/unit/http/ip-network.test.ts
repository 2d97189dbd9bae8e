import { BlockList } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createTrustedProxies, networkOf, parseIp } from '../../../src/http/ip-network.js';

const ip = (text: string) => {
  const parsed = parseIp(text);
  if (parsed === undefined) throw new Error(`${text} is an address`);
  return parsed;
};

describe('parseIp', () => {
  it.each([
    ['192.0.2.7', 'ipv4', '192.0.2.7'],
    ['2001:DB8:0:0:0:0:0:1', 'ipv6', '2001:db8::1'],
    ['2001:db8:0000::0001', 'ipv6', '2001:db8::1'],
    ['2001:db8:0:0:1:0:0:1', 'ipv6', '2001:db8::1:0:0:1'],
    ['::ffff:198.51.100.9', 'ipv4', '198.51.100.9'],
    ['::FFFF:c633:6409', 'ipv4', '198.51.100.9'],
    ['0:0:0:0:0:ffff:c633:6409', 'ipv4', '198.51.100.9'],
    ['fe80::1%eth0', 'ipv6', 'fe80::1'],
    ['::1', 'ipv6', '::1'],
  ])('reads %s as %s %s', (text, family, canonical) => {
    expect(parseIp(text)).toEqual({ family, text: canonical });
  });

  it.each([
    '',
    'unknown',
    '192.0.2.7:4711',
    '[2001:db8::1]',
    '[2001:db8::1]:443',
    ' 192.0.2.7',
    '01.2.3.4',
    '192.0.2.7/32',
    '2001:db8::1::2',
    '_hidden',
  ])('refuses %j: it is not exactly an address', (text) => {
    expect(parseIp(text)).toBeUndefined();
  });

  it('gives every spelling of an IPv6 address one text', () => {
    fc.assert(
      fc.property(fc.ipV6(), (address) => {
        expect(parseIp(address.toUpperCase())).toEqual(parseIp(address));
        const canonical = ip(address).text;
        expect(parseIp(canonical)?.text).toBe(canonical);
      }),
    );
  });
});

describe('networkOf', () => {
  it.each([
    ['2001:db8:aa:bb::1', 64, '2001:db8:aa:bb::/64'],
    ['2001:db8:aa:bb:cc:dd:ee:ff', 64, '2001:db8:aa:bb::/64'],
    ['2001:db8:aa:bbff::1', 60, '2001:db8:aa:bbf0::/60'],
    ['2001:db8:aa:bb::1', 48, '2001:db8:aa::/48'],
    ['2001:db8::1', 128, '2001:db8::1'],
    ['::1.2.3.4', 96, '::/96'],
    ['192.0.2.7', 32, '192.0.2.7'],
    ['192.0.2.7', 24, '192.0.2.0/24'],
    ['192.0.255.7', 20, '192.0.240.0/20'],
  ])('puts %s in /%i as %s', (address, prefix, network) => {
    expect(networkOf(ip(address), prefix)).toBe(network);
  });

  it('names the one network of that prefix that holds the address, whatever the address', () => {
    fc.assert(
      fc.property(fc.ipV6(), fc.integer({ min: 0, max: 127 }), (text, prefix) => {
        const address = ip(text);
        const network = networkOf(address, prefix);
        const [base = '', bits] = network.split('/');
        const list = new BlockList();
        list.addSubnet(base, Number(bits ?? prefix), address.family);
        expect(list.check(address.text, address.family)).toBe(true);
        expect(networkOf(ip(base), prefix)).toBe(network);
      }),
    );
  });
});

describe('createTrustedProxies', () => {
  it('trusts single addresses and CIDR ranges of both families, and nothing else', () => {
    const trusted = createTrustedProxies([
      '10.0.0.0/8',
      '192.0.2.7',
      '2001:db8:1::/48',
      '::1',
      '::ffff:172.16.0.0/108',
      '198.51.100.77/24',
    ]);
    const yes = ['10.200.3.4', '192.0.2.7', '2001:db8:1:ffff::9', '::1', '172.16.9.9'];
    const no = ['11.0.0.1', '192.0.2.8', '2001:db8:2::1', '::2', '172.32.0.1', '198.51.101.1'];
    expect(yes.map((a) => trusted.has(a))).toEqual(yes.map(() => true));
    expect(no.map((a) => trusted.has(a))).toEqual(no.map(() => false));
    // Host bits of a range are ignored: 198.51.100.77/24 is 198.51.100.0/24.
    expect(trusted.has('198.51.100.1')).toBe(true);
  });

  it('trusts nobody when the list is empty', () => {
    expect(createTrustedProxies([]).has('127.0.0.1')).toBe(false);
  });
});
