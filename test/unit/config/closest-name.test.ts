import { describe, expect, it } from 'vitest';
import { closestName, editDistance } from '../../../src/config/closest-name.js';

describe('editDistance', () => {
  it.each([
    ['port', 'port', 0],
    ['', 'port', 4],
    ['prot', 'port', 1],
    ['treshold', 'threshold', 1],
    ['timeout', 'timeoutMs', 2],
    ['kitten', 'sitting', 3],
  ])('is %i edits from %s to %s', (a, b, distance) => {
    expect(editDistance(a, b)).toBe(distance);
    expect(editDistance(b, a)).toBe(distance);
  });
});

describe('closestName', () => {
  const known = ['host', 'port', 'headersTimeoutMs', 'requestTimeoutMs', 'trustedProxies'];

  it('finds the known name a typo, a swap, a missing unit or another case was meant as', () => {
    expect(closestName('prot', known)).toBe('port');
    expect(closestName('requestTimeout', known)).toBe('requestTimeoutMs');
    expect(closestName('trustedProxy', known)).toBe('trustedProxies');
    expect(closestName('HOST', known)).toBe('host');
  });

  it('finds nothing for a name close to no known one, or with nothing known', () => {
    expect(closestName('typo', known)).toBeUndefined();
    expect(closestName('stripEverything', known)).toBeUndefined();
    expect(closestName('port', [])).toBeUndefined();
  });

  it('takes the closest of several candidates, the first of equally close ones', () => {
    expect(closestName('headersTimeoutMx', known)).toBe('headersTimeoutMs');
    expect(closestName('bost', ['host', 'post'])).toBe('host');
  });
});
