import { describe, expect, it } from 'vitest';
import { checkRequestTarget } from '../../../src/routing/check-request-target.js';

describe('checkRequestTarget', () => {
  it('splits a clean origin-form target into path and raw query', () => {
    expect(checkRequestTarget('/accounts?limit=10&order=desc')).toEqual({
      path: '/accounts',
      query: '?limit=10&order=desc',
    });
  });

  it('returns an empty query when there is no "?"', () => {
    expect(checkRequestTarget('/accounts/')).toEqual({ path: '/accounts/', query: '' });
  });

  it('keeps a lone "?" as the query', () => {
    expect(checkRequestTarget('/accounts?')).toEqual({ path: '/accounts', query: '?' });
  });

  it('leaves the query untouched, dots and escapes included', () => {
    expect(checkRequestTarget('/a?x=../..&y=%2e%2F%00%zz\\')).toEqual({
      path: '/a',
      query: '?x=../..&y=%2e%2F%00%zz\\',
    });
  });

  it.each([
    '/accounts/%20x',
    '/accounts/%3Aadmin',
    "/accounts/a:b@c!$&'()*+,=",
    '/accounts/.hidden',
    '/accounts/...',
    '/accounts/..x',
    '/a%C3%A9',
  ])('accepts the harmless spelling %s', (target) => {
    expect(checkRequestTarget(target)).toEqual({ path: target, query: '' });
  });

  it.each([
    ['a ".." segment', '/accounts/../admin'],
    ['a trailing ".." segment', '/accounts/..'],
    ['a "." segment', '/accounts/./'],
    ['a trailing "." segment', '/accounts/.'],
    ['a leading ".." segment', '/../accounts'],
    ['"%2e%2e"', '/accounts/%2e%2e/admin'],
    ['"%2E%2E"', '/accounts/%2E%2E/admin'],
    ['".%2e"', '/accounts/.%2e/admin'],
    ['a single "%2e"', '/accounts/%2e'],
    ['"%2e" inside a segment', '/accounts/a%2eb'],
    ['an encoded "/" (%2f)', '/accounts%2fadmin'],
    ['an encoded "/" (%2F)', '/accounts%2Fadmin'],
    ['an encoded "\\" (%5c)', '/accounts%5cadmin'],
    ['an encoded "\\" (%5C)', '/accounts%5Cadmin'],
    ['a raw backslash', '/accounts\\..\\admin'],
    ['a trailing backslash', '/accounts\\'],
    ['%00', '/accounts%00'],
    ['%0a', '/accounts%0a'],
    ['%0A', '/accounts%0A'],
    ['%0d', '/accounts%0d'],
    ['%0D', '/accounts%0D'],
    ['%09', '/accounts%09'],
    ['%7f', '/accounts%7f'],
    ['%1F', '/accounts%1F'],
    ['a fragment', '/accounts#top'],
    ['a fragment after the query', '/accounts?x=1#top'],
    ['an empty fragment', '/accounts#'],
    ['absolute form', 'http://x/accounts'],
    ['absolute form with https', 'https://evil.example/accounts'],
    ['the asterisk form', '*'],
    ['authority form', 'example.com:443'],
    ['a relative path', 'accounts'],
    ['an empty target', ''],
    ['a truncated escape at the end', '/accounts%'],
    ['a one-digit escape', '/accounts%2'],
    ['a non-hex escape', '/accounts%zz'],
    ['a half-hex escape', '/accounts%g1'],
    ['a "%" before a slash', '/a%/b'],
    // Spellings that an upstream decoding or normalizing the path treats like another path.
    ['an empty segment', '/accounts//admin'],
    ['an empty first segment', '//accounts'],
    ['a trailing empty segment', '/accounts//'],
    ['an encoded letter', '/accounts/%61dmin'],
    ['an encoded upper-case letter', '/%41ccounts'],
    ['an encoded digit', '/v%31'],
    ['an encoded "-"', '/a%2Db'],
    ['an encoded "_"', '/a%5Fb'],
    ['an encoded "~"', '/a%7E'],
    ['a raw ";"', '/accounts/admin;/x'],
    ['a ";" parameter', '/accounts;jsessionid=1'],
    ['an encoded ";"', '/accounts/admin%3B/x'],
    ['an encoded ";" in lower case', '/accounts/admin%3b/x'],
    ['an encoded "%"', '/accounts/%2561dmin'],
    ['a lower-case escape', '/caf%c3%a9'],
    ['a raw space', '/a b'],
    ['a raw "|"', '/a|b'],
    ['a raw non-ASCII character', '/café'],
  ])('refuses %s', (_label, target) => {
    expect(checkRequestTarget(target)).toBeUndefined();
  });

  it('keeps the query out of the path rules: ";", "//" and escapes there are accepted', () => {
    expect(checkRequestTarget('/a?x=;//%61%3b')).toEqual({ path: '/a', query: '?x=;//%61%3b' });
  });
});
