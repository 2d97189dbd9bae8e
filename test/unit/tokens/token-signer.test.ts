import { createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { calculateJwkThumbprint, decodeJwt, decodeProtectedHeader, exportJWK, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../support/temp-dirs.js';
import { createBearerVerifier } from '../../../src/auth/jwt/bearer-verifier.js';
import type { TokensConfig } from '../../../src/config/config-schema.js';
import { parseConfig } from '../../../src/config/load-config.js';
import { createSigningKeys } from '../../../src/tokens/signing-key.js';
import { createTokenSigner, GATEWAY_TOKEN_SOURCE } from '../../../src/tokens/token-signer.js';

const NOW_MS = Date.UTC(2030, 0, 1, 12, 0, 0);
const NOW_SEC = NOW_MS / 1000;

const BASE: TokensConfig = {
  issuer: 'https://gateway.test',
  audience: 'accounts',
  lifetimeSec: 600,
  algorithm: 'ES256',
  previousPublicKeys: [],
};

function pkcs8(key: KeyObject): string {
  return key.export({ type: 'pkcs8', format: 'pem' }).toString();
}

function spki(key: KeyObject): string {
  return createPublicKey(key).export({ type: 'spki', format: 'pem' }).toString();
}

/** The settings with their key in hand, as the CLI and the composition root resolve them. */
const resolved = (tokens: TokensConfig) => createSigningKeys(() => undefined).resolve(tokens);

const ecKey = (): KeyObject => generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
const edKey = (): KeyObject => generateKeyPairSync('ed25519').privateKey;

function verifierFor(source: Parameters<typeof createBearerVerifier>[0]['sources'][number]) {
  return createBearerVerifier({
    sources: [source],
    clockToleranceSec: 5,
    cacheTtlSec: 0,
    cacheMaxEntries: 10,
    now: () => NOW_MS,
  });
}

describe('token signer', () => {
  it('signs ES256 by default and publishes the public key under the kid it puts in the header', async () => {
    const key = ecKey();
    const signer = await createTokenSigner({ ...BASE, signingKey: pkcs8(key) }, () => NOW_MS);
    const issued = await signer.issue('subject-1', 'alice');
    const header = decodeProtectedHeader(issued.accessToken);
    const publicJwk = await exportJWK(createPublicKey(key));
    const kid = await calculateJwkThumbprint(publicJwk);
    expect(header).toEqual({ alg: 'ES256', kid, typ: 'at+jwt' });
    expect(signer.jwks).toEqual({
      keys: [
        { kty: 'EC', crv: 'P-256', x: publicJwk.x, y: publicJwk.y, kid, alg: 'ES256', use: 'sig' },
      ],
    });
    expect(signer.jwks.keys[0]).not.toHaveProperty('d');
  });

  it('puts iss, aud, sub, iat, exp, jti and preferred_username in every token', async () => {
    const signer = await createTokenSigner({ ...BASE, signingKey: pkcs8(ecKey()) }, () => NOW_MS);
    const issued = await signer.issue('subject-1', 'alice');
    const claims = decodeJwt(issued.accessToken);
    expect(claims).toEqual({
      iss: 'https://gateway.test',
      aud: 'accounts',
      sub: 'subject-1',
      iat: NOW_SEC,
      exp: NOW_SEC + 600,
      jti: expect.stringMatching(/^[0-9a-f-]{36}$/) as unknown,
      preferred_username: 'alice',
    });
    expect(issued).toEqual({
      accessToken: issued.accessToken,
      expiresIn: 600,
      expiresAt: new Date((NOW_SEC + 600) * 1000).toISOString(),
    });
    const again = decodeJwt((await signer.issue('subject-1', 'alice')).accessToken);
    expect(again.jti).not.toBe(claims.jti);
  });

  it("carries the user's scopes in a space-delimited scope claim (RFC 9068 §2.2.3), none without", async () => {
    const signer = await createTokenSigner({ ...BASE, signingKey: pkcs8(ecKey()) }, () => NOW_MS);
    const scoped = decodeJwt(
      (await signer.issue('subject-1', 'alice', ['accounts:read', 'keys'])).accessToken,
    );
    expect(scoped.scope).toBe('accounts:read keys');
    const plain = decodeJwt((await signer.issue('subject-1', 'alice')).accessToken);
    expect(plain).not.toHaveProperty('scope');
  });

  it('signs EdDSA with an Ed25519 key', async () => {
    const key = edKey();
    const signer = await createTokenSigner(
      { ...BASE, algorithm: 'EdDSA', signingKey: pkcs8(key) },
      () => NOW_MS,
    );
    const issued = await signer.issue('subject-2', 'bob');
    const publicJwk = await exportJWK(createPublicKey(key));
    const kid = await calculateJwkThumbprint(publicJwk);
    expect(decodeProtectedHeader(issued.accessToken)).toEqual({ alg: 'EdDSA', kid, typ: 'at+jwt' });
    expect(signer.jwks).toEqual({
      keys: [{ kty: 'OKP', crv: 'Ed25519', x: publicJwk.x, kid, alg: 'EdDSA', use: 'sig' }],
    });
    const identity = await verifierFor(signer.keySource).verify(issued.accessToken);
    expect(identity).toEqual({
      subject: 'subject-2',
      method: 'bearer',
      source: GATEWAY_TOKEN_SOURCE,
      username: 'bob',
      scopes: [],
    });
  });

  it('gives a keySource the Bearer verifier accepts its tokens with, with no extra config', async () => {
    const signer = await createTokenSigner({ ...BASE, signingKey: pkcs8(ecKey()) }, () => NOW_MS);
    expect(signer.keySource).toMatchObject({
      name: GATEWAY_TOKEN_SOURCE,
      algorithms: ['ES256'],
      issuer: 'https://gateway.test',
      audience: 'accounts',
    });
    const issued = await signer.issue('subject-1', 'alice');
    await expect(verifierFor(signer.keySource).verify(issued.accessToken)).resolves.toEqual({
      subject: 'subject-1',
      method: 'bearer',
      source: GATEWAY_TOKEN_SOURCE,
      username: 'alice',
      scopes: [],
    });
  });

  it('has its keySource reject a token signed by another key under the same kid', async () => {
    const signer = await createTokenSigner({ ...BASE, signingKey: pkcs8(ecKey()) }, () => NOW_MS);
    const kid = signer.jwks.keys[0]?.kid ?? '';
    const forged = await new SignJWT({ preferred_username: 'alice' })
      .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
      .setIssuer(BASE.issuer)
      .setAudience(BASE.audience)
      .setSubject('subject-1')
      .setIssuedAt(NOW_SEC)
      .setExpirationTime(NOW_SEC + 60)
      .sign(ecKey());
    await expect(verifierFor(signer.keySource).verify(forged)).resolves.toMatchObject({
      denied: 'invalid_token',
    });
  });

  it('has its keySource report a token it issued as expired once exp has passed', async () => {
    const clock = { ms: NOW_MS };
    const signer = await createTokenSigner({ ...BASE, signingKey: pkcs8(ecKey()) }, () => clock.ms);
    const issued = await signer.issue('subject-1', 'alice');
    const verifier = createBearerVerifier({
      sources: [signer.keySource],
      clockToleranceSec: 5,
      cacheTtlSec: 0,
      cacheMaxEntries: 10,
      now: () => NOW_MS + 601_000 + 5_000,
    });
    await expect(verifier.verify(issued.accessToken)).resolves.toMatchObject({
      denied: 'token_expired',
    });
  });

  it('publishes previousPublicKeys and still verifies tokens the previous key signed', async () => {
    const previous = ecKey();
    const previousEd = edKey();
    const signer = await createTokenSigner(
      {
        ...BASE,
        signingKey: pkcs8(ecKey()),
        previousPublicKeys: [spki(previous), spki(previousEd)],
      },
      () => NOW_MS,
    );
    const previousJwk = await exportJWK(createPublicKey(previous));
    const previousKid = await calculateJwkThumbprint(previousJwk);
    const previousEdJwk = await exportJWK(createPublicKey(previousEd));
    expect(signer.jwks.keys).toHaveLength(3);
    expect(signer.jwks.keys[1]).toEqual({
      kty: 'EC',
      crv: 'P-256',
      x: previousJwk.x,
      y: previousJwk.y,
      kid: previousKid,
      alg: 'ES256',
      use: 'sig',
    });
    expect(signer.jwks.keys[2]).toEqual({
      kty: 'OKP',
      crv: 'Ed25519',
      x: previousEdJwk.x,
      kid: await calculateJwkThumbprint(previousEdJwk),
      alg: 'EdDSA',
      use: 'sig',
    });
    expect([...signer.keySource.algorithms].sort()).toEqual(['ES256', 'EdDSA']);

    // A token the previous gateway key issued before the rotation (same claims, its own kid).
    const old = await new SignJWT({ preferred_username: 'alice' })
      .setProtectedHeader({ alg: 'ES256', kid: previousKid, typ: 'at+jwt' })
      .setIssuer(BASE.issuer)
      .setAudience(BASE.audience)
      .setSubject('subject-1')
      .setIssuedAt(NOW_SEC - 60)
      .setExpirationTime(NOW_SEC + 240)
      .sign(previous);
    await expect(verifierFor(signer.keySource).verify(old)).resolves.toEqual({
      subject: 'subject-1',
      method: 'bearer',
      source: GATEWAY_TOKEN_SOURCE,
      username: 'alice',
      scopes: [],
    });
    // And the current key keeps signing with its own kid.
    const current = await signer.issue('subject-1', 'alice');
    expect(decodeProtectedHeader(current.accessToken).kid).toBe(signer.jwks.keys[0]?.kid);
    await expect(verifierFor(signer.keySource).verify(current.accessToken)).resolves.toMatchObject({
      subject: 'subject-1',
    });
  });

  it('throws when the signing key does not fit the algorithm', async () => {
    await expect(
      createTokenSigner({ ...BASE, algorithm: 'ES256', signingKey: pkcs8(edKey()) }),
    ).rejects.toThrow('tokens.signingKey: the key does not fit tokens.algorithm ES256');
    await expect(
      createTokenSigner({ ...BASE, algorithm: 'EdDSA', signingKey: pkcs8(ecKey()) }),
    ).rejects.toThrow('tokens.signingKey: the key does not fit tokens.algorithm EdDSA');
  });

  it('throws for a key of a curve or type neither algorithm takes', async () => {
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey;
    await expect(createTokenSigner({ ...BASE, signingKey: pkcs8(p384) })).rejects.toThrow(
      'tokens.signingKey: must be a P-256 (ES256) or Ed25519 (EdDSA) key',
    );
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    await expect(createTokenSigner({ ...BASE, signingKey: pkcs8(rsa) })).rejects.toThrow(
      'tokens.signingKey: must be a P-256 (ES256) or Ed25519 (EdDSA) key',
    );
    await expect(
      createTokenSigner({ ...BASE, signingKey: pkcs8(ecKey()), previousPublicKeys: [spki(rsa)] }),
    ).rejects.toThrow(
      'tokens.previousPublicKeys[0]: must be a P-256 (ES256) or Ed25519 (EdDSA) key',
    );
  });

  it('signs with the key in signingKeyFile and publishes its public half', async () => {
    const key = ecKey();
    const file = join(tempDir('signer-'), 'signing.pem');
    writeFileSync(file, pkcs8(key));
    const signer = await createTokenSigner(
      resolved({ ...BASE, signingKeyFile: file }),
      () => NOW_MS,
    );
    const kid = await calculateJwkThumbprint(await exportJWK(createPublicKey(key)));
    expect(signer.jwks.keys.map((k) => k.kid)).toEqual([kid]);
    const issued = await signer.issue('subject-1', 'alice');
    expect(decodeProtectedHeader(issued.accessToken).kid).toBe(kid);
  });

  it('takes a multi-line PEM from an environment variable named in the YAML', async () => {
    const key = edKey();
    const config = parseConfig(
      'tokens:\n  algorithm: EdDSA\n  signingKey: ${SIGNING_KEY}\n',
      'inline',
      { SIGNING_KEY: pkcs8(key) },
    );
    const signer = await createTokenSigner(resolved(config.tokens), () => NOW_MS);
    const kid = await calculateJwkThumbprint(await exportJWK(createPublicKey(key)));
    expect(signer.jwks.keys).toEqual([expect.objectContaining({ kty: 'OKP', kid })]);
  });

  it('issues tokens for 15 minutes when the configuration says nothing', async () => {
    const { tokens } = parseConfig('', 'inline');
    expect(tokens.lifetimeSec).toBe(900);
    const issued = await (await createTokenSigner(resolved(tokens), () => NOW_MS)).issue('s', 'u');
    expect(issued.expiresIn).toBe(900);
    const claims = decodeJwt(issued.accessToken);
    expect((claims.exp ?? 0) - (claims.iat ?? 0)).toBe(900);
  });
});
