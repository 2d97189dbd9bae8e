import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KeyObject } from 'node:crypto';
import { exportJWK, exportSPKI, generateKeyPair } from 'jose';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  createKeySource,
  createResilientRemoteJwks,
  DEFAULT_JWKS_TIMING,
  KeySourceUnavailableError,
} from '../../../../src/auth/jwt/key-sources.js';
import { startJwksIssuer } from '../../../support/jwks-issuer.js';

describe('createKeySource', () => {
  it('turns a secret into its UTF-8 bytes and keeps the allow-list, issuer and audience', () => {
    const source = createKeySource({
      name: 'hs',
      algorithms: ['HS256', 'HS384'],
      secret: 'an-hmac-secret-that-is-long-enough-1234',
      issuer: 'https://issuer.example',
      audience: 'gateway',
    });
    expect(source).toEqual({
      name: 'hs',
      algorithms: ['HS256', 'HS384'],
      issuer: 'https://issuer.example',
      audience: 'gateway',
      key: new TextEncoder().encode('an-hmac-secret-that-is-long-enough-1234'),
    });
  });

  it('reads a PEM public key into a public KeyObject', async () => {
    const { publicKey } = await generateKeyPair('ES256', { extractable: true });
    const source = createKeySource({
      name: 'pem',
      algorithms: ['ES256'],
      publicKey: await exportSPKI(publicKey),
    });
    expect(source.key).toBeInstanceOf(KeyObject);
    expect((source.key as KeyObject).type).toBe('public');
  });

  it('reads a JWK public key given as JSON text', async () => {
    const { publicKey } = await generateKeyPair('RS256', { extractable: true });
    const source = createKeySource({
      name: 'jwk',
      algorithms: ['RS256'],
      publicKey: `  ${JSON.stringify(await exportJWK(publicKey))}`,
    });
    expect((source.key as KeyObject).asymmetricKeyType).toBe('rsa');
  });

  it('reads a public key from publicKeyFile', async () => {
    const { publicKey } = await generateKeyPair('EdDSA', { extractable: true });
    const dir = mkdtempSync(join(tmpdir(), 'gw-keys-'));
    try {
      const file = join(dir, 'key.pem');
      writeFileSync(file, await exportSPKI(publicKey));
      const source = createKeySource({
        name: 'file',
        algorithms: ['EdDSA'],
        publicKeyFile: file,
      });
      expect((source.key as KeyObject).asymmetricKeyType).toBe('ed25519');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('makes a resolver function for a JWKS URL without fetching at creation', () => {
    const source = createKeySource({
      name: 'jwks',
      algorithms: ['ES256'],
      jwksUrl: 'http://127.0.0.1:1/jwks.json',
    });
    expect(typeof source.key).toBe('function');
  });

  it('KeySourceUnavailableError keeps its cause', () => {
    const cause = new Error('ECONNREFUSED');
    const error = new KeySourceUnavailableError(cause);
    expect([error.name, error.message, error.cause]).toEqual([
      'KeySourceUnavailableError',
      'key source unavailable',
      cause,
    ]);
  });

  it('counts a 200 whose body is not a JSON Web Key Set as a failed fetch, and keeps no time for it', async () => {
    const server = createServer((_req, res) => res.end('{"keys":"none"}'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const fetches = { fetches: 0, failures: 0 };
      const remote = createResilientRemoteJwks(
        new URL(`http://127.0.0.1:${port}/jwks.json`),
        1_000,
        Date.now,
        fetches,
      );
      await expect(
        remote({ alg: 'ES256', kid: 'k1' }, { payload: '', signature: '' }),
      ).rejects.toBeInstanceOf(KeySourceUnavailableError);
      expect(fetches).toEqual({ fetches: 1, failures: 1 });
      expect(remote.fetchedAtMs()).toBeUndefined();
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('a failed JWKS fetch', () => {
  it('is told by why: the status, not a key set, a timeout, no answer', async () => {
    const issuer = await startJwksIssuer();
    let nowMs = 0;
    const reasons: string[] = [];
    const remote = createResilientRemoteJwks(
      new URL(issuer.entry().jwksUrl ?? ''),
      { ...DEFAULT_JWKS_TIMING, timeoutMs: 200, cooldownMs: 1 },
      () => nowMs,
      { fetches: 0, failures: 0 },
      (reason) => reasons.push(reason),
    );
    const attempt = async (): Promise<void> => {
      // Past the backoff of the previous failure (at most a minute).
      nowMs += 60_000;
      await expect(
        remote({ alg: 'ES256', kid: 'k1' }, { payload: '', signature: '' }),
      ).rejects.toBeInstanceOf(KeySourceUnavailableError);
    };
    try {
      issuer.answer('error');
      await attempt();
      issuer.answer('not-keys');
      await attempt();
      issuer.answer('hang');
      await attempt();
    } finally {
      await issuer.close();
    }
    await attempt();
    expect(reasons).toEqual([
      'status 500',
      'not a JSON Web Key Set',
      'timeout',
      'no answer (ECONNREFUSED)',
    ]);
  });
});
