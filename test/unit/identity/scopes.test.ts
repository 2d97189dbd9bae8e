import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SCOPE } from '../../../src/identity/identity-formats.js';
import { hasScopes, parseScopeList, uniqueScopes } from '../../../src/identity/scopes.js';

describe('SCOPE (RFC 6749 §3.3 scope-token)', () => {
  it('takes every printable ASCII character but space, " and \\', () => {
    for (let code = 0x21; code <= 0x7e; code += 1) {
      const char = String.fromCharCode(code);
      expect(SCOPE.pattern.test(char), char).toBe(char !== '"' && char !== '\\');
    }
  });

  it('refuses an empty token, a space, a control character, non-ASCII and over 128 characters', () => {
    for (const text of ['', 'a b', 'a\tb', 'é', 'x'.repeat(129)])
      expect(SCOPE.pattern.test(text)).toBe(false);
    expect(SCOPE.pattern.test('x'.repeat(128))).toBe(true);
  });
});

describe('parseScopeList', () => {
  it('splits on spaces, keeps each scope once and drops what is not a scope token', () => {
    expect(parseScopeList('a  b a c"d')).toEqual(['a', 'b']);
    expect(parseScopeList('')).toEqual([]);
    expect(parseScopeList(undefined)).toEqual([]);
  });
});

describe('uniqueScopes', () => {
  it('keeps the strings that are scope tokens, each once, in their first order', () => {
    expect(uniqueScopes(['b', 1, 'a', 'b', null, 'x y'])).toEqual(['b', 'a']);
  });
});

describe('hasScopes', () => {
  it('holds when nothing is required', () => {
    expect(hasScopes([], [])).toBe(true);
    expect(hasScopes(['a'], [])).toBe(true);
  });

  it('needs every required scope, not just one', () => {
    expect(hasScopes(['a', 'b'], ['a', 'b'])).toBe(true);
    expect(hasScopes(['a'], ['a', 'b'])).toBe(false);
    expect(hasScopes([], ['a'])).toBe(false);
  });

  it('is exactly the subset relation', () => {
    const scope = fc.constantFrom('a', 'b', 'c', 'd');
    fc.assert(
      fc.property(fc.array(scope), fc.array(scope), (granted, required) => {
        const subset = required.every((s) => new Set(granted).has(s));
        expect(hasScopes(granted, required)).toBe(subset);
      }),
    );
  });
});
