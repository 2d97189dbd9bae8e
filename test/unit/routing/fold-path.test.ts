import { describe, expect, it } from 'vitest';
import { foldPath } from '../../../src/routing/fold-path.js';

describe('foldPath', () => {
  it.each([
    ['/accounts/ADMIN', '/accounts/admin'],
    // ı (dotless i): Java's equalsIgnoreCase reads it as i.
    ['/accounts/adm%C4%B1n/x', '/accounts/admin/x'],
    // İ (dotted capital I): i in the simple lower-case mapping.
    ['/accounts/ADM%C4%B0N', '/accounts/admin'],
    // ſ (long s) upper-cases to S; K (Kelvin sign) lower-cases to k.
    ['/de%C5%BFk', '/desk'],
    ['/des%E2%84%AA', '/desk'],
    // NFKC: fullwidth letters, a ligature; ß upper-cases to SS.
    ['/%EF%BD%81dmin', '/admin'],
    ['/%EF%AC%81le', '/file'],
    ['/stra%C3%9Fe', '/strasse'],
    // Fullwidth solidus and full stop become a boundary and a dot: the caller re-checks them.
    ['/a%EF%BC%8Fb%EF%BC%8E', '/a/b.'],
  ])('reads %s as %s', (path, folded) => {
    expect(foldPath(path)).toBe(folded);
  });

  it.each([
    // é has no ASCII reading (NFKC keeps it composed); reserved escapes stay.
    '/caf%C3%A9',
    '/a%3Ab%40c',
    // Not UTF-8: a lone continuation byte, a truncated sequence, an overlong `/`.
    '/a%80b',
    '/a%C4',
    '/a%C0%AF',
    '/already/lower',
  ])('leaves %s as it is', (path) => {
    expect(foldPath(path)).toBe(path);
  });

  it('keeps the bytes around a malformed one and folds what is well-formed', () => {
    expect(foldPath('/adm%FF%C4%B1n')).toBe('/adm%FFin');
    expect(foldPath('/%C3%A9%C4%B1')).toBe('/%C3%A9i');
  });
});
