import { describe, expect, it } from 'vitest';
import { parseAuthorization, parseBasic } from '../../../src/auth/parse-authorization.js';

const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');
const b64Bytes = (bytes: number[]): string => Buffer.from(bytes).toString('base64');
const MAX_TOKEN = 8192;

describe('parseAuthorization: Basic (RFC 7617)', () => {
  it('decodes the RFC 7617 example Aladdin:open sesame', () => {
    expect(parseAuthorization('Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==', MAX_TOKEN)).toEqual({
      scheme: 'basic',
      key: 'Aladdin',
      secret: 'open sesame',
    });
  });

  it('decodes the RFC 7617 UTF-8 example test:123£', () => {
    expect(parseAuthorization('Basic dGVzdDoxMjPCow==', MAX_TOKEN)).toEqual({
      scheme: 'basic',
      key: 'test',
      secret: '123£',
    });
  });

  it.each(['basic', 'BASIC', 'bAsIc'])('accepts the scheme name spelled %s', (scheme) => {
    expect(parseAuthorization(`${scheme} QWxhZGRpbjpvcGVuIHNlc2FtZQ==`, MAX_TOKEN)).toEqual({
      scheme: 'basic',
      key: 'Aladdin',
      secret: 'open sesame',
    });
  });

  it('accepts several spaces between the scheme and the credentials', () => {
    expect(parseAuthorization('Basic   QWxhZGRpbjpvcGVuIHNlc2FtZQ==', MAX_TOKEN)).toEqual({
      scheme: 'basic',
      key: 'Aladdin',
      secret: 'open sesame',
    });
  });

  it.each([
    ['characters outside the alphabet', 'QWxh!!ZGRpbjpvcGVuIHNlc2FtZQ=='],
    ['missing padding', 'QWxhZGRpbjpvcGVuIHNlc2FtZQ'],
    ['a length that is not a multiple of 4', 'QWxhZGRpbjpvcGVuIHNlc2FtZQ='],
    ['too much padding', 'QWxhZGRpbjpvcGVuIHNlc2FtZQ==='],
    ['padding in the middle', 'QWxh=ZGRpbjpvcGVuIHNlc2FtZQ=='],
    ['non-zero padding bits (two-char group)', 'QWxhZGRpbjpvcGVuIHNlc2FtZR=='],
    ['non-zero padding bits (three-char group)', 'YTpiY2R='],
    ['the URL-safe alphabet', 'YWI6Pj4-Pz8_'],
    ['embedded whitespace', 'QWxhZGRp bjpvcGVuIHNlc2FtZQ=='],
    ['a trailing space', 'QWxhZGRpbjpvcGVuIHNlc2FtZQ== '],
    ['nothing after the scheme', ''],
  ])('returns malformed_basic for base64 with %s', (_label, encoded) => {
    expect(parseAuthorization(`Basic ${encoded}`, MAX_TOKEN)).toEqual({
      scheme: 'malformed_basic',
    });
  });

  it('accepts the standard alphabet’s "+" and "/" (the URL-safe twin above is refused)', () => {
    expect(parseBasic('YWI6Pj4+Pz8/')).toEqual({ scheme: 'basic', key: 'ab', secret: '>>>???' });
  });

  it('accepts canonical padding for a three-character final group', () => {
    expect(parseBasic('YTpiY2Q=')).toEqual({ scheme: 'basic', key: 'a', secret: 'bcd' });
  });

  it('returns malformed_basic when the decoded bytes are not valid UTF-8', () => {
    expect(parseAuthorization(`Basic ${b64Bytes([0x61, 0x3a, 0xff])}`, MAX_TOKEN)).toEqual({
      scheme: 'malformed_basic',
    });
    // An overlong encoding of '/' (0xC0 0xAF) must not decode either.
    expect(parseAuthorization(`Basic ${b64Bytes([0x61, 0x3a, 0xc0, 0xaf])}`, MAX_TOKEN)).toEqual({
      scheme: 'malformed_basic',
    });
  });

  it('returns malformed_basic when the decoded value has no colon', () => {
    expect(parseAuthorization(`Basic ${b64('Aladdin')}`, MAX_TOKEN)).toEqual({
      scheme: 'malformed_basic',
    });
  });

  it.each([
    ['NUL in the secret', 'key:sec\u0000ret'],
    ['TAB in the key', 'k\tey:secret'],
    ['CR LF in the secret', 'key:secret\r\nX-Auth-Subject: admin'],
    ['DEL in the secret', 'key:secret\u007f'],
    ['ESC in the key', '\u001bkey:secret'],
  ])('returns malformed_basic for control characters (%s)', (_label, decoded) => {
    expect(parseAuthorization(`Basic ${b64(decoded)}`, MAX_TOKEN)).toEqual({
      scheme: 'malformed_basic',
    });
  });

  it('splits at the first colon so the secret may contain colons', () => {
    expect(parseAuthorization(`Basic ${b64('ak_1:se:cr:et:')}`, MAX_TOKEN)).toEqual({
      scheme: 'basic',
      key: 'ak_1',
      secret: 'se:cr:et:',
    });
  });

  it('parses an empty secret (the denial is the verifier’s job)', () => {
    expect(parseAuthorization(`Basic ${b64('ak_1:')}`, MAX_TOKEN)).toEqual({
      scheme: 'basic',
      key: 'ak_1',
      secret: '',
    });
  });

  it('parses an empty key', () => {
    expect(parseAuthorization(`Basic ${b64(':secret')}`, MAX_TOKEN)).toEqual({
      scheme: 'basic',
      key: '',
      secret: 'secret',
    });
  });

  it('returns malformed_basic for an encoded value longer than 1024 characters', () => {
    const encoded = b64(`k:${'s'.repeat(800)}`);
    expect(encoded.length).toBeGreaterThan(1024);
    expect(parseAuthorization(`Basic ${encoded}`, MAX_TOKEN)).toEqual({
      scheme: 'malformed_basic',
    });
  });

  it('keeps non-ASCII printable characters in key and secret', () => {
    expect(parseAuthorization(`Basic ${b64('clé:mot de passe ✓')}`, MAX_TOKEN)).toEqual({
      scheme: 'basic',
      key: 'clé',
      secret: 'mot de passe ✓',
    });
  });
});

describe('parseAuthorization: Bearer (RFC 6750)', () => {
  const jwtLike =
    'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';

  it.each(['Bearer', 'bearer', 'BEARER'])('returns the token for the scheme spelled %s', (s) => {
    expect(parseAuthorization(`${s} ${jwtLike}`, MAX_TOKEN)).toEqual({
      scheme: 'bearer',
      token: jwtLike,
    });
  });

  it('accepts every b64token character and trailing "="', () => {
    const token = 'Az09-._~+/abc==';
    expect(parseAuthorization(`Bearer ${token}`, MAX_TOKEN)).toEqual({ scheme: 'bearer', token });
  });

  it.each([
    ['an empty token', ''],
    ['a space inside the token', 'abc def'],
    ['a comma', 'abc,def'],
    ['a quote', 'abc"def'],
    ['"=" before other characters', 'abc=def'],
    ['only "="', '=='],
    ['a non-ASCII character', 'abcé'],
  ])('returns malformed_bearer for %s', (_label, token) => {
    expect(parseAuthorization(`Bearer ${token}`, MAX_TOKEN)).toEqual({
      scheme: 'malformed_bearer',
    });
  });

  it('accepts a token of exactly the length cap and refuses one byte more', () => {
    expect(parseAuthorization(`Bearer ${'a'.repeat(128)}`, 128)).toEqual({
      scheme: 'bearer',
      token: 'a'.repeat(128),
    });
    expect(parseAuthorization(`Bearer ${'a'.repeat(129)}`, 128)).toEqual({
      scheme: 'malformed_bearer',
    });
  });
});

describe('parseAuthorization: other headers', () => {
  it('returns none for an absent header', () => {
    expect(parseAuthorization(undefined, MAX_TOKEN)).toEqual({ scheme: 'none' });
  });

  it('returns none for an empty header', () => {
    expect(parseAuthorization('', MAX_TOKEN)).toEqual({ scheme: 'none' });
  });

  it.each([
    'Digest username="Aladdin", realm="x"',
    'Negotiate YIIabc',
    'BasicQWxhZGRpbjpvcGVuIHNlc2FtZQ==',
    'BearerXYZ',
    'QWxhZGRpbjpvcGVuIHNlc2FtZQ==',
  ])('returns unsupported for %j', (header) => {
    expect(parseAuthorization(header, MAX_TOKEN)).toEqual({ scheme: 'unsupported' });
  });
});

describe('parseAuthorization: a scheme with no credentials after it', () => {
  it.each(['Basic', 'basic', 'BASIC  '])('reads %j as a malformed Basic credential', (header) => {
    expect(parseAuthorization(header, 8192)).toEqual({ scheme: 'malformed_basic' });
  });

  it.each(['Bearer', 'bearer'])('reads %j as no token at all (an unsupported form)', (header) => {
    expect(parseAuthorization(header, 8192)).toEqual({ scheme: 'unsupported' });
  });

  it('still reads another bare word as an unsupported scheme', () => {
    expect(parseAuthorization('Basicx', 8192)).toEqual({ scheme: 'unsupported' });
  });
});
