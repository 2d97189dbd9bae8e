import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { checkKeyPair } from '../../../src/tls/check-key-pair.js';
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
});
