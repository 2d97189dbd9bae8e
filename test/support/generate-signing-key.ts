import { createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, type JWK } from 'jose';

/** A token signing key the test holds too. */
export interface SigningKey {
  /** PKCS#8 PEM, as `tokens.signingKey` takes it. */
  readonly pem: string;
  readonly privateKey: KeyObject;
  readonly publicJwk: JWK;
  /** RFC 7638 thumbprint of the public key: the kid the gateway publishes. */
  readonly kid: string;
}

/** A fresh P-256 key (the gateway's default ES256). */
export async function generateSigningKey(): Promise<SigningKey> {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const publicJwk = await exportJWK(createPublicKey(privateKey));
  return { pem, privateKey, publicJwk, kid: await calculateJwkThumbprint(publicJwk) };
}
