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
 * Whether `keyPem` is the private key of the certificate `certPem` (the first of a chain
 * file), both parsed: what OpenSSL would otherwise refuse only when it builds a TLS context,
 * on the first handshake or request. A refusal is a fixed sentence, never a byte of a file.
 */
export function matchKeyPair(
  certPem: Buffer,
  keyPem: Buffer,
): { readonly ok: true; readonly certificate: X509Certificate } | RefusedPair {
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
    return {
      ok: false,
      reason: isEncryptedPem(keyPem)
        ? 'the key file holds an encrypted key (the gateway reads unencrypted PEM keys only)'
        : 'the key file holds no PEM private key',
    };
  }
  return matches
    ? { ok: true, certificate }
    : { ok: false, reason: 'the key does not match the certificate' };
}

/** PKCS#8 (`BEGIN ENCRYPTED PRIVATE KEY`) and OpenSSL's legacy form (`Proc-Type: 4,ENCRYPTED`). */
function isEncryptedPem(pem: Buffer): boolean {
  const text = pem.toString('latin1');
  return text.includes('-----BEGIN ENCRYPTED PRIVATE KEY-----') || text.includes(',ENCRYPTED');
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
  const matched = matchKeyPair(certPem, keyPem);
  if (!matched.ok) return matched;
  const { certificate } = matched;
  const notBefore = Date.parse(certificate.validFrom);
  const notAfter = Date.parse(certificate.validTo);
  if (nowMs < notBefore) return { ok: false, reason: 'the certificate is not valid yet' };
  if (nowMs >= notAfter) return { ok: false, reason: 'the certificate has expired' };
  return { ok: true, notAfterSec: Math.floor(notAfter / 1000), serial: certificate.serialNumber };
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

/**
 * Whether a CA file holds at least one PEM certificate that parses: OpenSSL takes a file of
 * anything else as an empty trust list, and every connection then fails verification with
 * a message that never names the file.
 */
export function holdsCertificate(pem: Buffer): boolean {
  for (const [block] of pem.toString('latin1').matchAll(PEM_CERTIFICATE)) {
    try {
      new X509Certificate(block);
      return true;
    } catch {
      // Not a certificate after all: the next block may be one.
    }
  }
  return false;
}
