import { X509Certificate } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { checkKeyPair, holdsCertificate } from '../../../src/tls/check-key-pair.js';
import { createTestCa, LOOPBACK } from '../../support/certificates.js';

describe('checkKeyPair', () => {
  const ca = createTestCa();
  afterAll(() => ca.remove());
  const server = ca.issue('server', { commonName: 'localhost', ...LOOPBACK });
  const read = (file: string): Buffer => readFileSync(file);

  it('accepts a certificate with its own key, naming its serial and not-after', () => {
    const checked = checkKeyPair(read(server.certFile), read(server.keyFile), Date.now());
    const notAfter = Date.parse(new X509Certificate(server.cert).validTo);
    expect(checked).toEqual({ ok: true, serial: server.serial, notAfterSec: notAfter / 1000 });
  });

  it('refuses a key that is not the certificate’s', () => {
    const checked = checkKeyPair(read(server.certFile), read(ca.strayKey('stray')), Date.now());
    expect(checked).toEqual({ ok: false, reason: 'the key does not match the certificate' });
  });

  it('refuses a certificate past its not-after, and one before its not-before', () => {
    const expired = ca.issue('expired', {
      commonName: 'localhost',
      startDate: '20200101000000Z',
      endDate: '20200102000000Z',
    });
    const future = ca.issue('future', {
      commonName: 'localhost',
      startDate: '20990101000000Z',
      endDate: '20990102000000Z',
    });
    expect(checkKeyPair(read(expired.certFile), read(expired.keyFile), Date.now())).toEqual({
      ok: false,
      reason: 'the certificate has expired',
    });
    expect(checkKeyPair(read(future.certFile), read(future.keyFile), Date.now())).toEqual({
      ok: false,
      reason: 'the certificate is not valid yet',
    });
  });

  it('refuses files that hold no PEM, saying which, without quoting them', () => {
    const junk = Buffer.from('-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n');
    expect(checkKeyPair(junk, read(server.keyFile), Date.now())).toEqual({
      ok: false,
      reason: 'the certificate file holds no PEM certificate',
    });
    expect(checkKeyPair(read(server.certFile), junk, Date.now())).toEqual({
      ok: false,
      reason: 'the key file holds no PEM private key',
    });
  });

  it('says a key is encrypted rather than missing', () => {
    const encrypted = execFileSync('openssl', [
      'pkey',
      '-in',
      server.keyFile,
      '-aes256',
      '-passout',
      'pass:secret',
    ]);
    expect(checkKeyPair(read(server.certFile), encrypted, Date.now())).toEqual({
      ok: false,
      reason: 'the key file holds an encrypted key (the gateway reads unencrypted PEM keys only)',
    });
  });
});

describe('holdsCertificate', () => {
  const ca = createTestCa();
  afterAll(() => ca.remove());

  it('finds a certificate among other blocks, and none in a key, an empty file or a broken block', () => {
    const key = readFileSync(ca.strayKey('key'));
    expect(holdsCertificate(Buffer.from(ca.cert))).toBe(true);
    expect(holdsCertificate(Buffer.concat([key, Buffer.from(ca.cert)]))).toBe(true);
    expect(holdsCertificate(key)).toBe(false);
    expect(holdsCertificate(Buffer.alloc(0))).toBe(false);
    const broken = '-----BEGIN CERTIFICATE-----\nc2VjcmV0\n-----END CERTIFICATE-----\n';
    expect(holdsCertificate(Buffer.from(broken))).toBe(false);
  });
});
