import { X509Certificate, createPrivateKey } from 'node:crypto';

/** A certificate and key that may be served: what the metric and the log line show of it. */
export interface ServablePair {
  readonly ok: true;
  /** The certificate's not-after, in Unix seconds. */
  readonly notAfterSec: number;
  /** Hexadecimal, as openssl prints it: names the certificate in log lines. */
  readonly serial: string;
}

/** Why a pair may not be served: a fixed sentence, never a byte of the key. */
export interface RefusedPair {
  readonly ok: false;
  readonly reason: string;
}

/**
 * Whether `certPem` and `keyPem` may replace (or start) what the listener serves: both parse,
 * the key is the certificate's, and the certificate is in date at `nowMs` (RFC 5280
 * §4.1.2.5: valid from notBefore through notAfter). A refusal is a value: the caller keeps
 * what it serves. Only the leaf (the first certificate of a chain file) is checked.
 */
export function checkKeyPair(
  certPem: Buffer,
  keyPem: Buffer,
  nowMs: number,
): ServablePair | RefusedPair {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(certPem);
  } catch {
    return { ok: false, reason: 'the certificate file holds no PEM certificate' };
  }
  let matches: boolean;
  try {
    matches = certificate.checkPrivateKey(createPrivateKey(keyPem));
  } catch {
    // OpenSSL's message may quote what it failed to parse: not logged.
    return { ok: false, reason: 'the key file holds no PEM private key' };
  }
  if (!matches) return { ok: false, reason: 'the key does not match the certificate' };
  const notBefore = Date.parse(certificate.validFrom);
  const notAfter = Date.parse(certificate.validTo);
  if (nowMs < notBefore) return { ok: false, reason: 'the certificate is not valid yet' };
  if (nowMs >= notAfter) return { ok: false, reason: 'the certificate has expired' };
  return { ok: true, notAfterSec: Math.floor(notAfter / 1000), serial: certificate.serialNumber };
}
