import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load-config.js';
import { configProblems } from '../../support/config-problems.js';

// TLS settings: off unless given, each file named, and refused where it cannot apply.

const problemsOf = configProblems;

describe('TLS settings', () => {
  it('are off by default', () => {
    const config = parseConfig('', 'test.yaml');
    expect(config.server.tls).toBeUndefined();
    expect(config.upstreams.accounts?.tls).toBeUndefined();
    expect(config.credentials.redis.tls).toBeUndefined();
  });

  it('take the files of the API port, of an https upstream and of a rediss Redis', () => {
    const config = parseConfig(
      [
        'server: { tls: { certFile: cert.pem, keyFile: key.pem } }',
        'upstreams:',
        '  accounts:',
        '    url: https://10.0.0.7:8443',
        '    tls: { caFile: ca.pem, servername: accounts.internal, certFile: c.pem, keyFile: c.key }',
        'credentials: { redis: { url: "rediss://redis:6380", tls: { caFile: redis-ca.pem } } }',
        '',
      ].join('\n'),
      'test.yaml',
    );
    expect(config.server.tls).toEqual({ certFile: 'cert.pem', keyFile: 'key.pem' });
    expect(config.upstreams.accounts?.tls).toEqual({
      caFile: 'ca.pem',
      servername: 'accounts.internal',
      certFile: 'c.pem',
      keyFile: 'c.key',
    });
    expect(config.credentials.redis.tls).toEqual({ caFile: 'redis-ca.pem' });
  });

  it('refuse a listener without its key, a client certificate without its key, upstream TLS over http, and a redis:// URL with a CA', () => {
    const problems = problemsOf(
      [
        'server: { tls: { certFile: cert.pem } }',
        'upstreams:',
        '  plain: { url: "http://10.0.0.7", tls: { caFile: ca.pem } }',
        '  half: { url: "https://10.0.0.8", tls: { certFile: c.pem } }',
        'routes: [{ name: r, paths: [/a], upstream: plain, upstreamPath: /a }]',
        'credentials: { redis: { url: "redis://redis:6379", tls: { caFile: ca.pem } } }',
        '',
      ].join('\n'),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^server\.tls\.keyFile: /),
        'upstreams.plain.tls: only applies to an https:// url',
        'upstreams.half.tls: certFile and keyFile go together',
        'credentials.redis.tls: needs a rediss:// url',
      ]),
    );
  });
});
