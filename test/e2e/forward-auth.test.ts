import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FORWARD_AUTH_MESSAGES } from '../../src/errors/gateway-error.js';
import { basicHeader } from '../support/basic-header.js';
import { startEchoUpstream, type EchoUpstream } from '../support/echo-upstream.js';
import { BASIC_CHALLENGE, expectGatewayError } from '../support/expect-gateway-error.js';
import {
  CACHE_MAX_AGE_SEC,
  forwardAuthGatewayYaml,
  LIMITED,
  LOCKOUT_THRESHOLD,
  NOBODY,
  READER,
  SUBJECT,
} from '../support/forward-auth-gateway.js';
import { startGateway, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import type { HttpAnswer } from '../support/http-answer.js';
import { send, type RequestOptions } from '../support/send.js';

// The forward-auth check by request shape, sent from the test as each proxy sends it:
// Traefik (and Caddy) with X-Forwarded-Method/-Uri/-Host/-Proto, nginx with the
// X-Original-* headers its documented config sets, Envoy ext_authz with the original request
// line under the check path. nginx and Caddy themselves: forward-auth-proxies.test.ts.

let upstream: EchoUpstream;
let gateway: GatewayProcess;

beforeAll(async () => {
  upstream = await startEchoUpstream();
  gateway = await startGateway(await forwardAuthGatewayYaml(upstream.url));
});

afterAll(async () => {
  await gateway?.stop();
  await upstream?.close();
});

const basic = (pair: { key: string; secret: string }) => basicHeader(pair.key, pair.secret);

/** What Traefik's ForwardAuth sends: a GET naming the original request in X-Forwarded-*. */
function traefik(
  method: string,
  uri: string,
  headers: Record<string, string> = {},
  options: RequestOptions = {},
): Promise<HttpAnswer> {
  return send(gateway.url, '/auth/check', {
    ...options,
    headers: {
      'x-forwarded-method': method,
      'x-forwarded-uri': uri,
      'x-forwarded-host': 'api.example.com',
      'x-forwarded-proto': 'https',
      'x-forwarded-for': '198.51.100.7',
      ...headers,
    },
  });
}

/** What Envoy's ext_authz HTTP service sends: the original method, path_prefix + path. */
function envoy(method: string, path: string, headers: Record<string, string> = {}) {
  return send(gateway.url, `/auth/check${path}`, {
    method,
    headers: { 'x-forwarded-for': '198.51.100.7', ...headers },
  });
}

function expectAllowed(answer: HttpAnswer, key: string, scopes?: string): void {
  expect(answer.status).toBe(200);
  expect(answer.body).toBe('');
  expect(answer.headers).toMatchObject({
    'x-auth-subject': SUBJECT,
    'x-auth-method': 'basic',
    'x-auth-key': key,
    'x-accel-expires': String(CACHE_MAX_AGE_SEC),
    'cache-control': `private, max-age=${CACHE_MAX_AGE_SEC}`,
    'content-length': '0',
  });
  // Always sent, empty when the credential holds none: copied over a client's own.
  expect(answer.headers['x-auth-scopes']).toBe(scopes ?? '');
}

/** A refusal in the envelope, its code also in X-Auth-Error for a proxy that reads no body. */
function expectRefused(answer: HttpAnswer, code: Parameters<typeof expectGatewayError>[1]): void {
  expectGatewayError(answer, code);
  expect(answer.headers['x-auth-error']).toBe(code);
}

describe('forward-auth by request shape', () => {
  it('allows a Traefik-shaped check with exactly 200, an empty body and the identity in X-Auth-*', async () => {
    expectAllowed(
      await traefik('GET', '/accounts?limit=5', { authorization: basic(READER) }),
      READER.key,
      'accounts:read',
    );
  });

  it('allows an nginx-shaped check (X-Original-Method and X-Original-URI)', async () => {
    const answer = await send(gateway.url, '/auth/check', {
      headers: {
        'x-original-method': 'GET',
        'x-original-uri': '/accounts/',
        authorization: basic(READER),
      },
    });
    expectAllowed(answer, READER.key, 'accounts:read');
  });

  it("allows an Envoy-shaped check: the original method and path under the check path, the prefix route's rest included", async () => {
    expectAllowed(
      await envoy('POST', '/items/42?x=1', { authorization: basic(NOBODY) }),
      NOBODY.key,
    );
  });

  it('answers 401 with the challenges when the credentials are missing or wrong', async () => {
    const missing = await traefik('GET', '/accounts');
    expectGatewayError(missing, 'missing_credentials');
    expect(missing.headers['www-authenticate']).toContain(BASIC_CHALLENGE);
    const wrong = await envoy('GET', '/accounts', {
      authorization: basicHeader(READER.key, 'wrong-secret-0123456789abcdef'),
    });
    expectGatewayError(wrong, 'invalid_credentials');
    expect(wrong.headers['www-authenticate']).toContain(BASIC_CHALLENGE);
    expectGatewayError(
      await traefik('GET', '/accounts', {
        authorization: basicHeader('ak_fwd_unknown', 'unknown-secret-0123456789abcdef'),
      }),
      'invalid_credentials',
    );
  });

  it('answers 403 forbidden when the credential lacks a scope the route requires', async () => {
    expectGatewayError(
      await traefik('GET', '/accounts', { authorization: basic(NOBODY) }),
      'forbidden',
    );
  });

  it("answers 429 with Retry-After once the route's rate limit is spent", async () => {
    const headers = { authorization: basic(LIMITED) };
    expect((await traefik('GET', '/limited', headers)).status).toBe(200);
    const refused = await traefik('GET', '/limited', headers);
    expectGatewayError(refused, 'rate_limited');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
  });

  it("applies the route's methods to the original method: 405 with Allow", async () => {
    const answer = await envoy('DELETE', '/items/42', { authorization: basic(READER) });
    expectGatewayError(answer, 'method_not_allowed');
    expect(answer.headers.allow).toBe('GET, POST');
  });

  it("answers 404 for an original URI no route matches, the gateway's own endpoints and the check itself included", async () => {
    const headers = { authorization: basic(READER) };
    for (const uri of ['/admin', '/keys', '/auth/token', '/auth/check'])
      expectGatewayError(await traefik('GET', uri, headers), 'not_found');
    expectGatewayError(await envoy('GET', '/auth/check/accounts', headers), 'not_found');
  });

  it('answers 400 invalid_path for an original URI spelled to normalize elsewhere', async () => {
    expectGatewayError(
      await traefik('GET', '/items/../admin', { authorization: basic(READER) }),
      'invalid_path',
    );
  });

  it.each(['/items//7', '/items/%37', '/items/7;x', '/items/7%3B'])(
    'answers 400 invalid_path for the original URI %s, in every shape, as a request to it would get',
    async (uri) => {
      const headers = { authorization: basic(READER) };
      expectGatewayError(await traefik('GET', uri, headers), 'invalid_path');
      expectGatewayError(await envoy('GET', uri, headers), 'invalid_path');
    },
  );

  it('names the code of every refusal in X-Auth-Error (nginx sees no body), and of no allow', async () => {
    const headers = { authorization: basic(READER) };
    expectRefused(await traefik('GET', '/accounts'), 'missing_credentials');
    expectRefused(
      await traefik('GET', '/accounts', { authorization: 'Bearer x' }),
      'invalid_token',
    );
    expectRefused(await traefik('GET', '/accounts', { authorization: basic(NOBODY) }), 'forbidden');
    expectRefused(await traefik('GET', '/accounts//', headers), 'invalid_path');
    const nginxShaped = await send(gateway.url, '/auth/check', {
      headers: { ...headers, 'x-original-method': 'GET', 'x-original-uri': '/accounts;x' },
    });
    expectRefused(nginxShaped, 'invalid_path');
    expectRefused(await traefik('GET', '/admin', headers), 'not_found');
    expectRefused(await traefik('DELETE', '/items/1', headers), 'method_not_allowed');
    const unnamed = await send(gateway.url, '/auth/check', { headers });
    expectGatewayError(unnamed, 'bad_request', { message: FORWARD_AUTH_MESSAGES.unnamed });
    expect(unnamed.headers['x-auth-error']).toBe('bad_request');
    const allowed = await traefik('GET', '/accounts', headers);
    expect(allowed.status).toBe(200);
    expect(allowed.headers['x-auth-error']).toBeUndefined();
  });

  it('refuses every shape with 403 from a peer that is not a trusted proxy', async () => {
    const message = FORWARD_AUTH_MESSAGES.untrusted;
    const from = '127.0.0.2';
    const headers = { authorization: basic(READER) };
    expectGatewayError(await traefik('GET', '/accounts', headers, { from }), 'forbidden', {
      message,
    });
    const envoyShaped = await send(gateway.url, '/auth/check/accounts', { headers, from });
    expectGatewayError(envoyShaped, 'forbidden', { message });
  });

  it('answers 400 when the check names no original request, or names it two ways', async () => {
    const message = FORWARD_AUTH_MESSAGES.unnamed;
    const headers = { authorization: basic(READER) };
    expectGatewayError(await send(gateway.url, '/auth/check', { headers }), 'bad_request', {
      message,
    });
    // A client behind Caddy adding nginx's header: neither is believed.
    expectGatewayError(
      await traefik('GET', '/items/1', { ...headers, 'x-original-uri': '/accounts' }),
      'bad_request',
      { message },
    );
  });

  it('locks out the client address the trusted proxy names in X-Forwarded-For, not the proxy', async () => {
    const wrong = { authorization: basicHeader(READER.key, 'wrong-secret-0123456789abcdef') };
    const attacker = { ...wrong, 'x-forwarded-for': '198.51.100.66' };
    for (let i = 0; i < LOCKOUT_THRESHOLD; i += 1)
      expectGatewayError(await traefik('GET', '/accounts', attacker), 'invalid_credentials');
    // Refused before any bcrypt run (a cached right pair would still pass, as on a proxied route).
    const locked = await traefik('GET', '/accounts', attacker);
    expectGatewayError(locked, 'rate_limited');
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
    // Another client behind the same proxy is not locked out.
    const other = { ...wrong, 'x-forwarded-for': '198.51.100.67' };
    expectGatewayError(await traefik('GET', '/accounts', other), 'invalid_credentials');
  });

  it("never forwards: the gateway's upstream received nothing from any check", () => {
    expect(upstream.received).toEqual([]);
  });
});

describe('forward-auth switched off (the default)', () => {
  it('answers 404 at the check path, as for any path no route matches', async () => {
    const off = await startGateway(
      gatewayYaml({
        upstreamUrl: upstream.url,
        config: { server: { trustedProxies: ['127.0.0.1'] } },
      }),
    );
    try {
      const answer = await send(off.url, '/auth/check', {
        headers: { 'x-forwarded-method': 'GET', 'x-forwarded-uri': '/accounts' },
      });
      expectGatewayError(answer, 'not_found');
    } finally {
      await off.stop();
    }
  });
});
