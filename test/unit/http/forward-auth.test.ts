import { describe, expect, it } from 'vitest';
import { readOriginalRequest, type ForwardAuthRequest } from '../../../src/http/forward-auth.js';

/** A check at the path itself from a trusted proxy, with these header lines. */
function atPath(headers: Record<string, string | string[]>, peerTrusted = true) {
  const distinct = Object.fromEntries(
    Object.entries(headers).map(([name, value]) => [name, Array.isArray(value) ? value : [value]]),
  );
  return readOriginalRequest({
    peerTrusted,
    method: 'GET',
    rest: undefined,
    query: '',
    headers: distinct,
  });
}

/** Envoy's shape: the original request line after `<path>/`. */
function underPath(request: Partial<ForwardAuthRequest>) {
  return readOriginalRequest({
    peerTrusted: true,
    method: 'GET',
    rest: 'accounts',
    query: '',
    headers: {},
    ...request,
  });
}

describe('readOriginalRequest', () => {
  it('reads Caddy and Traefik: X-Forwarded-Method and X-Forwarded-Uri, query kept raw', () => {
    expect(
      atPath({
        'x-forwarded-method': 'POST',
        'x-forwarded-uri': '/accounts?a=%2F&b',
        'x-forwarded-host': 'api.example.com',
        'x-forwarded-proto': 'https',
      }),
    ).toEqual({
      kind: 'original',
      method: 'POST',
      target: '/accounts?a=%2F&b',
      shape: 'x-forwarded',
    });
  });

  it("reads nginx's conventional X-Original-Method and X-Original-URI", () => {
    expect(atPath({ 'x-original-method': 'GET', 'x-original-uri': '/accounts/' })).toEqual({
      kind: 'original',
      method: 'GET',
      target: '/accounts/',
      shape: 'x-original',
    });
  });

  it("reads Envoy's original request line: its method, and the path after the check path with the query", () => {
    expect(underPath({ method: 'DELETE', rest: 'accounts/7', query: '?x=1' })).toEqual({
      kind: 'original',
      method: 'DELETE',
      target: '/accounts/7?x=1',
      shape: 'request-line',
    });
    expect(underPath({ rest: '' })).toMatchObject({ target: '/' });
  });

  it('refuses every shape from a peer that is not a trusted proxy', () => {
    expect(atPath({ 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/accounts' }, false)).toEqual({
      kind: 'untrusted',
    });
    expect(underPath({ peerTrusted: false })).toEqual({ kind: 'untrusted' });
  });

  it('names nothing without the headers, or with only half of a pair', () => {
    expect(atPath({})).toEqual({ kind: 'unnamed' });
    expect(atPath({ 'x-forwarded-uri': '/accounts' })).toEqual({ kind: 'unnamed' });
    expect(atPath({ 'x-original-method': 'GET' })).toEqual({ kind: 'unnamed' });
    expect(atPath({ 'x-forwarded-method': 'GET', 'x-forwarded-uri': '' })).toEqual({
      kind: 'unnamed',
    });
  });

  it('names nothing when a client behind one proxy adds the other family (no family is preferred)', () => {
    expect(
      atPath({
        'x-forwarded-method': 'GET',
        'x-forwarded-uri': '/admin',
        'x-original-uri': '/accounts',
      }),
    ).toEqual({ kind: 'unnamed' });
    expect(underPath({ headers: { 'x-forwarded-uri': ['/accounts'] } })).toEqual({
      kind: 'unnamed',
    });
  });

  it('names nothing when a header comes twice, or the method is not a token', () => {
    expect(
      atPath({ 'x-forwarded-method': 'GET', 'x-forwarded-uri': ['/admin', '/accounts'] }),
    ).toEqual({ kind: 'unnamed' });
    expect(atPath({ 'x-forwarded-method': 'GET POST', 'x-forwarded-uri': '/accounts' })).toEqual({
      kind: 'unnamed',
    });
  });
});
