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
  KeySourceUnavailableError,
} from '../../../../src/auth/jwt/key-sources.js';

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
