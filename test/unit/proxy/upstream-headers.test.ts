import type { IncomingHttpHeaders } from 'node:http';
import { DEFAULT_ALLOW_HEADERS } from '../../../src/config/config-schema.js';
import { describe, expect, it } from 'vitest';
import {
  buildUpstreamHeaders,
  createHeaderPolicy,
  type UpstreamRequestFacts,
} from '../../../src/proxy/upstream-headers.js';
import { normalizeAddress } from '../../../src/http/client-address.js';
import { createTrustedProxies } from '../../../src/http/ip-network.js';

const DEFAULT_ALLOW: readonly string[] = DEFAULT_ALLOW_HEADERS;

const policy = (
  overrides: Partial<{
    allowHeaders: readonly string[];
    forwardAuthorization: boolean;
  }> = {},
) =>
  createHeaderPolicy({
    allowHeaders: DEFAULT_ALLOW,
    forwardAuthorization: false,
    ...overrides,
  });

const GATEWAY_TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-53995c3f42cd8ad8-01';

const facts = (
  headers: IncomingHttpHeaders,
  more: Partial<UpstreamRequestFacts> = {},
): UpstreamRequestFacts => ({
  headers,
  identity: { subject: 'alice', method: 'basic', key: 'ak_alice', scopes: [] },
  requestId: 'req-1',
  peer: '203.0.113.9',
  peerTrusted: false,
  upstreamHost: 'upstream.internal:9000',
  encrypted: false,
  traceparent: GATEWAY_TRACEPARENT,
  tracestate: undefined,
  ...more,
});

/** The peer as the request handler describes it: normalized, and checked against the list. */
const from = (remote: string, trustedProxies: readonly string[] = []) => {
  const peer = normalizeAddress(remote);
  return { peer, peerTrusted: createTrustedProxies(trustedProxies).has(peer) };
};

const GATEWAY_SET = {
  host: 'upstream.internal:9000',
  'x-request-id': 'req-1',
  'x-auth-subject': 'alice',
  'x-auth-method': 'basic',
  'x-auth-key': 'ak_alice',
  'x-forwarded-for': '203.0.113.9',
  'x-forwarded-proto': 'http',
  traceparent: GATEWAY_TRACEPARENT,
};

describe('buildUpstreamHeaders', () => {
  it('sends the gateway’s traceparent and tracestate, never the client’s, even when allow-listed', () => {
    const client = {
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      tracestate: 'client=spoofed',
      accept: '*/*',
    };
    const out = buildUpstreamHeaders(
      policy({ allowHeaders: [...DEFAULT_ALLOW, 'traceparent', 'tracestate'] }),
      facts(client, { tracestate: 'vendor=kept' }),
    );
    expect(out).toEqual({ ...GATEWAY_SET, accept: '*/*', tracestate: 'vendor=kept' });
  });

  it('passes allow-listed headers and replaces everything else with the gateway’s own', () => {
    const out = buildUpstreamHeaders(
      policy(),
      facts({
        host: 'gw.example',
        accept: 'application/json',
        'accept-encoding': 'gzip',
        'user-agent': 'curl/8',
        authorization: 'Basic YTpi',
        'proxy-authorization': 'Basic YTpi',
        cookie: 'session=1',
        'x-custom': 'value',
        'x-request-id': 'client-chosen',
        forwarded: 'for=1.2.3.4',
        'x-real-ip': '1.2.3.4',
      }),
    );
    expect(out).toEqual({
      ...GATEWAY_SET,
      accept: 'application/json',
      'accept-encoding': 'gzip',
      'user-agent': 'curl/8',
      'x-forwarded-host': 'gw.example',
    });
  });

  it('drops every hop-by-hop header even when it is allow-listed', () => {
    const hop = {
      connection: 'keep-alive',
      'keep-alive': 'timeout=5',
      'proxy-connection': 'keep-alive',
      te: 'trailers',
      trailer: 'x-checksum',
      'transfer-encoding': 'chunked',
      upgrade: 'h2c',
      'http2-settings': 'AAMAAABkAARAAAAAAAIAAAAA',
      'proxy-authorization': 'Basic YTpi',
      'proxy-authenticate': 'Basic',
    };
    const out = buildUpstreamHeaders(
      policy({ allowHeaders: [...DEFAULT_ALLOW, ...Object.keys(hop)] }),
      facts({ ...hop, accept: '*/*' }),
    );
    expect(out).toEqual({ ...GATEWAY_SET, accept: '*/*' });
  });

  it('drops each header that Connection names, in any case and spacing', () => {
    const out = buildUpstreamHeaders(
      policy(),
      facts({
        connection: 'keep-alive,  User-Agent ,ACCEPT-language',
        'user-agent': 'curl/8',
        'accept-language': 'en',
        accept: '*/*',
      }),
    );
    expect(out).toEqual({ ...GATEWAY_SET, accept: '*/*' });
  });

  it('drops Authorization by default, even when it is allow-listed', () => {
    const out = buildUpstreamHeaders(
      policy({ allowHeaders: [...DEFAULT_ALLOW, 'authorization'] }),
      facts({ authorization: 'Bearer abc' }),
    );
    expect(out).toEqual(GATEWAY_SET);
  });

  it('forwards Authorization when forwardAuthorization is on', () => {
    const out = buildUpstreamHeaders(
      policy({ forwardAuthorization: true }),
      facts({ authorization: 'Bearer abc' }),
    );
    expect(out).toEqual({ ...GATEWAY_SET, authorization: 'Bearer abc' });
  });

  it('never passes incoming identity headers, even when they are allow-listed', () => {
    const spoofed = {
      'x-auth-subject': 'admin',
      'x-auth-method': 'bearer',
      'x-auth-key': 'ak_admin',
      'x-auth-roles': 'root',
    };
    const p = policy({ allowHeaders: [...DEFAULT_ALLOW, ...Object.keys(spoofed)] });
    expect(p.allow.has('x-auth-subject')).toBe(false);
    expect(p.allow.has('x-auth-roles')).toBe(false);
    const out = buildUpstreamHeaders(
      p,
      facts(spoofed, { identity: { subject: 'bob', method: 'bearer', scopes: [] } }),
    );
    expect(out).toEqual({
      host: 'upstream.internal:9000',
      'x-request-id': 'req-1',
      'x-auth-subject': 'bob',
      'x-auth-method': 'bearer',
      'x-forwarded-for': '203.0.113.9',
      'x-forwarded-proto': 'http',
      traceparent: GATEWAY_TRACEPARENT,
    });
  });

  // PHP's HTTP_X_AUTH_SUBJECT, WSGI's and Django's META map `_` and `-` to one name.
  it('treats "_" like "-" in the never-allowed names and prefixes, so X_Auth_Subject never passes', () => {
    const underscored = {
      x_auth_subject: 'root',
      x_auth_scopes: 'admin',
      x_forwarded_for: '10.0.0.1',
      x_request_id: 'forged',
      proxy_authorization: 'Basic YTpi',
      transfer_encoding: 'chunked',
      x_tenant: 't1',
    };
    const p = policy({
      allowHeaders: [...DEFAULT_ALLOW, ...Object.keys(underscored), 'X_Auth_Key'],
    });
    expect([...p.allow].filter((name) => name.includes('_'))).toEqual(['x_tenant']);
    const out = buildUpstreamHeaders(p, facts({ ...underscored, accept: '*/*' }));
    expect(out).toEqual({ ...GATEWAY_SET, accept: '*/*', x_tenant: 't1' });
  });

  // With Expect on the outgoing request, http-proxy-3 skips its proxyReq event, and with it
  // the forwarder's outgoing path and 504 timer.
  it('never passes Expect upstream, even when it is allow-listed', () => {
    const p = policy({ allowHeaders: [...DEFAULT_ALLOW, 'expect', 'Expect'] });
    expect(p.allow.has('expect')).toBe(false);
    const out = buildUpstreamHeaders(p, facts({ expect: '100-continue', accept: '*/*' }));
    expect(out).toEqual({ ...GATEWAY_SET, accept: '*/*' });
  });

  it('never passes a proxy-* header upstream, even when it is allow-listed', () => {
    const proxyHeaders = {
      'proxy-authorization': 'Basic YTpi',
      'proxy-connection': 'keep-alive',
      'proxy-status': 'x',
      'proxy-anything': 'y',
    };
    const p = policy({
      allowHeaders: [...DEFAULT_ALLOW, ...Object.keys(proxyHeaders), 'Proxy-Custom'],
    });
    expect([...p.allow].filter((name) => name.startsWith('proxy-'))).toEqual([]);
    const out = buildUpstreamHeaders(p, facts({ ...proxyHeaders, accept: '*/*' }));
    expect(out).toEqual({ ...GATEWAY_SET, accept: '*/*' });
  });

  it('removes the gateway-owned names from the allow-list and lower-cases the rest', () => {
    const p = policy({
      allowHeaders: [
        'Accept',
        'host',
        'authorization',
        'x-request-id',
        'forwarded',
        'x-forwarded-for',
        'x-forwarded-host',
        'X-Auth-Subject',
        'connection',
        'te',
      ],
    });
    expect([...p.allow]).toEqual(['accept']);
  });

  it('replaces the client’s X-Forwarded-* when the client is not a trusted proxy', () => {
    const out = buildUpstreamHeaders(
      policy(),
      facts(
        {
          host: 'gw.example',
          'x-forwarded-for': '1.2.3.4',
          'x-forwarded-proto': 'https',
          'x-forwarded-host': 'evil.example',
        },
        from('203.0.113.9', ['10.0.0.1']),
      ),
    );
    expect(out).toEqual({ ...GATEWAY_SET, 'x-forwarded-host': 'gw.example' });
  });

  it('appends to X-Forwarded-For and keeps Proto and Host from a trusted proxy', () => {
    const out = buildUpstreamHeaders(
      policy(),
      facts(
        {
          host: 'gw.internal',
          'x-forwarded-for': '198.51.100.7, 192.0.2.1',
          'x-forwarded-proto': 'https',
          'x-forwarded-host': 'api.example',
        },
        { ...from('10.0.0.1', ['10.0.0.1']) },
      ),
    );
    expect(out).toEqual({
      ...GATEWAY_SET,
      'x-forwarded-for': '198.51.100.7, 192.0.2.1, 10.0.0.1',
      'x-forwarded-proto': 'https',
      'x-forwarded-host': 'api.example',
    });
  });

  it('falls back to its own values when a trusted proxy sends no X-Forwarded-*', () => {
    const out = buildUpstreamHeaders(
      policy(),
      facts({ host: 'gw.internal' }, { ...from('10.0.0.1', ['10.0.0.1']), encrypted: true }),
    );
    expect(out).toEqual({
      ...GATEWAY_SET,
      'x-forwarded-for': '10.0.0.1',
      'x-forwarded-proto': 'https',
      'x-forwarded-host': 'gw.internal',
    });
  });

  it('treats an IPv4-mapped client address as the trusted IPv4 proxy', () => {
    const out = buildUpstreamHeaders(
      policy(),
      facts({ 'x-forwarded-for': '198.51.100.7' }, { ...from('::ffff:10.0.0.1', ['10.0.0.1']) }),
    );
    expect(out['x-forwarded-for']).toBe('198.51.100.7, 10.0.0.1');
  });

  it('normalises an IPv4-mapped trusted proxy in the configuration too', () => {
    const out = buildUpstreamHeaders(
      policy(),
      facts({ 'x-forwarded-for': '198.51.100.7' }, { ...from('10.0.0.1', ['::ffff:10.0.0.1']) }),
    );
    expect(out['x-forwarded-for']).toBe('198.51.100.7, 10.0.0.1');
  });

  it('writes an untrusted IPv4-mapped client as plain IPv4', () => {
    const out = buildUpstreamHeaders(
      policy(),
      facts({ 'x-forwarded-for': '1.1.1.1' }, from('::ffff:192.0.2.1')),
    );
    expect(out['x-forwarded-for']).toBe('192.0.2.1');
  });

  it('says https in X-Forwarded-Proto for an encrypted connection, whatever the client claims', () => {
    const out = buildUpstreamHeaders(
      policy(),
      facts({ 'x-forwarded-proto': 'http' }, { encrypted: true }),
    );
    expect(out['x-forwarded-proto']).toBe('https');
  });

  it('omits X-Forwarded-Host when neither Host nor a trusted value exists', () => {
    const out = buildUpstreamHeaders(policy(), facts({ 'x-forwarded-host': 'evil.example' }));
    expect(out).toEqual(GATEWAY_SET);
  });

  it('sets X-Auth-Key only for Basic identities', () => {
    const out = buildUpstreamHeaders(
      policy(),
      facts({}, { identity: { subject: 'carol', method: 'bearer', scopes: [] } }),
    );
    expect(out['x-auth-key']).toBeUndefined();
    expect([out['x-auth-subject'], out['x-auth-method']]).toEqual(['carol', 'bearer']);
  });

  it('keeps a multi-valued allow-listed header as it came', () => {
    const out = buildUpstreamHeaders(
      policy({ allowHeaders: ['x-multi'] }),
      facts({ 'x-multi': ['a', 'b'] }),
    );
    expect(out['x-multi']).toEqual(['a', 'b']);
  });
});
