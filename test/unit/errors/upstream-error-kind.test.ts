import { describe, expect, it } from 'vitest';
import { upstreamErrorKind } from '../../../src/errors/upstream-error-kind.js';

const withCode = (code: string): Error => Object.assign(new Error(code), { code });

describe('upstreamErrorKind', () => {
  it.each([
    ['ECONNREFUSED', 'connect_refused'],
    ['ECONNECT_TIMEOUT', 'connect_timeout'],
    ['UND_ERR_CONNECT_TIMEOUT', 'connect_timeout'],
    ['UND_ERR_HEADERS_TIMEOUT', 'timeout'],
    ['UND_ERR_BODY_TIMEOUT', 'timeout'],
    ['ECONNRESET', 'reset'],
    ['UND_ERR_SOCKET', 'reset'],
    ['DEPTH_ZERO_SELF_SIGNED_CERT', 'tls'],
    ['ERR_TLS_CERT_ALTNAME_INVALID', 'tls'],
    ['ERR_SSL_WRONG_VERSION_NUMBER', 'tls'],
    ['ENOTFOUND', 'other'],
    ['HPE_INVALID_CONSTANT', 'other'],
    ['constructor', 'other'],
  ])('names %s %s', (code, kind) => {
    expect(upstreamErrorKind(withCode(code))).toBe(kind);
  });

  it("names the engine's own timer a timeout, whatever the error says", () => {
    expect(upstreamErrorKind(withCode('ECONNRESET'), true)).toBe('timeout');
  });

  it("reads the cause's code when the error has none, and says other without any", () => {
    expect(upstreamErrorKind(new Error('x', { cause: withCode('ECONNREFUSED') }))).toBe(
      'connect_refused',
    );
    expect([upstreamErrorKind(new Error('x')), upstreamErrorKind(undefined)]).toEqual([
      'other',
      'other',
    ]);
  });
});
