import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import type { GatewayConfigInput } from './gateway-yaml.js';

type IssuerEntry = NonNullable<
  NonNullable<NonNullable<GatewayConfigInput['auth']>['bearer']>['issuers']
>[number];

/** An issuer publishing one ES256 key (`kid` k1) at a JWKS endpoint of the test's own, on port 0. */
export interface JwksIssuer {
  readonly issuer: string;
  /** Its `auth.bearer.issuers` entry, named `remote`, with `extra` laid over. */
  entry(extra?: Partial<IssuerEntry>): IssuerEntry;
  /** A token of `subject`, signed by its key, under `kid`, issued at `nowMs` for an hour. */
  token(kid: string, nowMs?: number): Promise<string>;
  /**
   * What the endpoint answers from now on: the key set (200), 500, a 200 that is not a key
   * set, or nothing at all (the request hangs until close).
   */
  answer(next: JwksAnswer): void;
  /** Requests the endpoint has had. */
  hits(): number;
  close(): Promise<void>;
}

export type JwksAnswer = 'keys' | 'error' | 'not-keys' | 'hang';

export async function startJwksIssuer(issuer = 'https://issuer.example'): Promise<JwksIssuer> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const keySet = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1' }] });
  let answer: JwksAnswer = 'keys';
  let hits = 0;
  const server = createServer((_req, res) => {
    hits += 1;
    if (answer === 'keys') res.writeHead(200, { 'content-type': 'application/json' }).end(keySet);
    else if (answer === 'not-keys')
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"keys":"none"}');
    else if (answer === 'error') res.writeHead(500).end('unavailable');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    issuer,
    entry: (extra = {}) => ({
      name: 'remote',
      algorithms: ['ES256'],
      issuer,
      jwksUrl: `http://127.0.0.1:${port}/.well-known/jwks.json`,
      ...extra,
    }),
    token: (kid, nowMs = Date.now()) => {
      const nowSec = Math.floor(nowMs / 1000);
      return new SignJWT({})
        .setProtectedHeader({ alg: 'ES256', kid })
        .setIssuer(issuer)
        .setSubject('subject-jwks')
        .setIssuedAt(nowSec)
        .setExpirationTime(nowSec + 3600)
        .sign(privateKey);
    },
    answer: (next) => {
      answer = next;
    },
    hits: () => hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
