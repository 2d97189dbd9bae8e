import { randomUUID, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import {
  calculateJwkThumbprint,
  createLocalJWKSet,
  exportJWK,
  SignJWT,
  type JSONWebKeySet,
  type JWK,
} from 'jose';
import type { TokensConfig } from '../config/config-schema.js';
import type { KeySource } from '../auth/jwt/key-sources.js';
import type { ResolvedTokensConfig } from './signing-key.js';

export interface IssuedToken {
  readonly accessToken: string;
  readonly expiresIn: number;
  readonly expiresAt: string;
}

export interface TokenSigner {
  /**
   * `scopes` go in the `scope` claim (RFC 9068 §2.2.3), left out when there are none; the
   * user's token generation in `gen` (TOKEN_GENERATION_CLAIM), left out when 0.
   */
  issue(
    subject: string,
    username: string,
    scopes?: readonly string[],
    tokenGeneration?: number,
  ): Promise<IssuedToken>;
  /** Public keys of the current and previous signing keys (RFC 7517 JWK Set). */
  readonly jwks: JSONWebKeySet;
  /** What the Bearer verifier needs to accept the tokens issued here, with no extra config. */
  readonly keySource: KeySource;
}

type SigningAlgorithm = TokensConfig['algorithm'];

/** The name of the key source for gateway-issued tokens (see Identity.source). */
export const GATEWAY_TOKEN_SOURCE = 'gateway';

/**
 * The claim of a gateway-issued token that holds its user's token generation (UserRecord):
 * absent for 0, so that tokens of users whose password never changed are as before.
 */
export const TOKEN_GENERATION_CLAIM = 'gen';

/** Signs with the key `config` holds (createSigningKeys in signing-key.ts chose it). */
export async function createTokenSigner(
  config: ResolvedTokensConfig,
  now: () => number = Date.now,
): Promise<TokenSigner> {
  const privateKey = createPrivateKey(config.signingKey);
  checkKeyFits(privateKey, config.algorithm, 'tokens.signingKey');
  const current = await publicJwk(createPublicKey(privateKey), config.algorithm);
  const previous = await Promise.all(
    config.previousPublicKeys.map((text, i) => {
      const key = createPublicKey(text);
      const algorithm = algorithmOf(key, `tokens.previousPublicKeys[${i}]`);
      return publicJwk(key, algorithm);
    }),
  );
  const jwks: JSONWebKeySet = { keys: [current, ...previous] };
  const kid = current.kid ?? '';
  return {
    jwks,
    keySource: {
      name: GATEWAY_TOKEN_SOURCE,
      algorithms: [...new Set(jwks.keys.map((k) => k.alg ?? config.algorithm))],
      issuer: config.issuer,
      audience: config.audience,
      key: createLocalJWKSet(jwks),
    },
    async issue(subject, username, scopes = [], tokenGeneration = 0) {
      const issuedAt = Math.floor(now() / 1000);
      const expiresAt = issuedAt + config.lifetimeSec;
      const claims = {
        preferred_username: username,
        ...(scopes.length === 0 ? {} : { scope: scopes.join(' ') }),
        ...(tokenGeneration === 0 ? {} : { [TOKEN_GENERATION_CLAIM]: tokenGeneration }),
      };
      const accessToken = await new SignJWT(claims)
        .setProtectedHeader({ alg: config.algorithm, kid, typ: 'at+jwt' })
        .setIssuer(config.issuer)
        .setAudience(config.audience)
        .setSubject(subject)
        .setIssuedAt(issuedAt)
        .setExpirationTime(expiresAt)
        .setJti(randomUUID())
        .sign(privateKey);
      return {
        accessToken,
        expiresIn: config.lifetimeSec,
        expiresAt: new Date(expiresAt * 1000).toISOString(),
      };
    },
  };
}

function algorithmOf(key: KeyObject, where: string): SigningAlgorithm {
  if (key.asymmetricKeyType === 'ed25519') return 'EdDSA';
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1')
    return 'ES256';
  throw new Error(`${where}: must be a P-256 (ES256) or Ed25519 (EdDSA) key`);
}

function checkKeyFits(key: KeyObject, algorithm: SigningAlgorithm, where: string): void {
  if (algorithmOf(key, where) !== algorithm)
    throw new Error(`${where}: the key does not fit tokens.algorithm ${algorithm}`);
}

async function publicJwk(key: KeyObject, algorithm: SigningAlgorithm): Promise<JWK> {
  const jwk = await exportJWK(key);
  return { ...jwk, kid: await calculateJwkThumbprint(jwk), alg: algorithm, use: 'sig' };
}
