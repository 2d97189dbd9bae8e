import { describe, expect, it } from 'vitest';
import { pageOf, portalPaths } from '../../../src/portal/portal-paths.js';

describe('the portal’s paths', () => {
  it('are under the base path', () => {
    const paths = portalPaths('/portal/');
    expect([paths.home, paths.signIn, paths.newPair, paths.pairs, paths.style]).toEqual([
      '/portal/',
      '/portal/sign-in',
      '/portal/keys/new',
      '/portal/keys',
      '/portal/portal.css',
    ]);
    expect(portalPaths('/self-service/').revoke('ak_x')).toBe('/self-service/keys/ak_x/revoke');
    expect(portalPaths('/self-service/').roll('ak_x')).toBe('/self-service/keys/ak_x/roll');
  });

  it('name a page by the rest after the base, and none for anything else', () => {
    expect(pageOf('')).toEqual({ page: 'home' });
    expect(pageOf('sign-in')).toEqual({ page: 'sign-in' });
    expect(pageOf('keys/new')).toEqual({ page: 'new-pair' });
    expect(pageOf('keys/ak_2bd80_7FqR0cX1mZ9pLw2sTn4vYb8d1wgUYX/revoke')).toEqual({
      page: 'revoke',
      key: 'ak_2bd80_7FqR0cX1mZ9pLw2sTn4vYb8d1wgUYX',
    });
    expect(pageOf('keys/ak_2bd80_7FqR0cX1mZ9pLw2sTn4vYb8d1wgUYX/roll')).toEqual({
      page: 'roll',
      key: 'ak_2bd80_7FqR0cX1mZ9pLw2sTn4vYb8d1wgUYX',
    });
    for (const rest of [
      'keys/x/rolls',
      'keys/a b/roll',
      'constructor',
      '__proto__',
      'keys/',
      'sign-in/',
      'keys/a b/revoke',
      'keys/x/y/revoke',
      'toString',
    ])
      expect(pageOf(rest)).toBeUndefined();
  });
});
