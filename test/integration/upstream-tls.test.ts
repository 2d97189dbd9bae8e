import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createGateway, type Gateway } from '../../src/gateway/gateway.js';
import { parseConfig } from '../../src/config/load-config.js';
import { TlsFileError } from '../../src/tls/upstream-tls.js';
import { basicHeader } from '../support/basic-header.js';
import { capturedLogger } from '../support/captured-logger.js';
import { createTestCa, LOOPBACK, type IssuedCertificate } from '../support/certificates.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { send } from '../support/send.js';

const ca = createTestCa('Upstream CA');
const otherCa = createTestCa('Other CA');
afterAll(() => {
  ca.remove();
  otherCa.remove();
});
const trusted = ca.issue('upstream', { commonName: 'localhost', ...LOOPBACK });
const untrusted = otherCa.issue('upstream', { commonName: 'localhost', ...LOOPBACK });
const internal = ca.issue('internal', {
  commonName: 'accounts.internal',
  dnsNames: ['accounts.internal'],
});
const client = ca.issue('gateway-client', { commonName: 'gateway', client: true });
const LISTING = { result: 'success', status: 200, meta: { count: 0 }, data: [] };

interface TlsUpstream {
  readonly url: string;
  /** The CN of the client certificate each request came with ('' for none). */
  readonly clients: string[];
  close(): Promise<void>;
}

/** An https upstream serving `served`; with `requireClient`, only to clients of `ca`. */
async function startTlsUpstream(
  served: IssuedCertificate,
  requireClient = false,
): Promise<TlsUpstream> {
  const clients: string[] = [];
  const server: Server = createServer(
    {
      cert: served.cert,
      key: served.key,
      ...(requireClient ? { ca: ca.cert, requestCert: true, rejectUnauthorized: true } : {}),
    },
    (req, res) => {
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      clients.push(typeof peer.subject?.CN === 'string' ? peer.subject.CN : '');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(LISTING));
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://127.0.0.1:${String((server.address() as AddressInfo).port)}`,
    clients,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe.each(['http-proxy-3', 'undici'] as const)('TLS to an upstream with %s', (engine) => {
  let gateway: Gateway | undefined;
  let upstream: TlsUpstream | undefined;
  afterEach(async () => {
    await gateway?.close();
    await upstream?.close();
    gateway = undefined;
    upstream = undefined;
  });

  const configWith = (tls: Record<string, string> | undefined) =>
    parseConfig(
      gatewayYaml({
        config: {
          server: { host: '127.0.0.1', port: 0 },
          admin: { enabled: false },
          upstreams: {
            accounts: { url: upstream?.url ?? '', engine, ...(tls === undefined ? {} : { tls }) },
          },
          credentials: { bootstrap: { enabled: true } },
          logging: { level: 'silent' },
        },
      }),
      'upstream-tls.yaml',
    );
  /** The listing through a gateway whose upstream has these TLS settings. */
  const listing = async (tls: Record<string, string> | undefined) => {
    gateway = await createGateway(configWith(tls), { logger: capturedLogger('silent').logger });
    port = (await gateway.listen()).port;
    return listingAgain();
  };
  let port = 0;
  /** The listing again, through the gateway already started. */
  const listingAgain = () => {
    const pair = gateway?.bootstrap;
    if (pair === undefined) throw new Error('the bootstrap pair is enabled');
    return send(`http://127.0.0.1:${String(port)}`, '/accounts', {
      headers: { authorization: basicHeader(pair.key, pair.secret) },
    });
  };

  it('forwards to an upstream whose certificate chains to the configured CA', async () => {
    upstream = await startTlsUpstream(trusted);
    const answer = await listing({ caFile: ca.certFile });
    expect({ status: answer.status, body: answer.json }).toEqual({ status: 200, body: LISTING });
  });

  it('answers 502 when the upstream’s certificate chains to no trusted CA', async () => {
    upstream = await startTlsUpstream(untrusted);
    expectGatewayError(await listing({ caFile: ca.certFile }), 'upstream_unavailable');
    expect(upstream.clients).toEqual([]);
  });

  it('answers 502 for a private CA that is not configured (verification is on by default)', async () => {
    upstream = await startTlsUpstream(trusted);
    expectGatewayError(await listing(undefined), 'upstream_unavailable');
  });

  it('checks the certificate against the configured servername, not the URL’s address', async () => {
    upstream = await startTlsUpstream(internal);
    expectGatewayError(await listing({ caFile: ca.certFile }), 'upstream_unavailable');
    await gateway?.close();
    gateway = undefined;
    const answer = await listing({ caFile: ca.certFile, servername: 'accounts.internal' });
    expect(answer.status).toBe(200);
  });

  it('presents the configured client certificate to an upstream that requires one', async () => {
    upstream = await startTlsUpstream(trusted, true);
    expectGatewayError(await listing({ caFile: ca.certFile }), 'upstream_unavailable');
    await gateway?.close();
    gateway = undefined;
    const answer = await listing({
      caFile: ca.certFile,
      certFile: client.certFile,
      keyFile: client.keyFile,
    });
    expect(answer.status).toBe(200);
    expect(upstream.clients).toEqual(['gateway']);
  });

  it('refuses a reload whose client key is not its certificate’s, and keeps forwarding with the served pair', async () => {
    upstream = await startTlsUpstream(trusted, true);
    const good = { caFile: ca.certFile, certFile: client.certFile, keyFile: client.keyFile };
    expect((await listing(good)).status).toBe(200);
    // OpenSSL would refuse this pair only when a request builds its context: with
    // http-proxy-3, inside https.request, as an exception that ended the process.
    const mixed = { ...good, keyFile: ca.strayKey('stray-client') };
    await expect(gateway?.reload(configWith(mixed))).rejects.toEqual(
      new TlsFileError(
        'keyFile',
        `the key does not match the certificate (certFile ${client.certFile}, keyFile ${mixed.keyFile})`,
      ),
    );
    expect((await listingAgain()).status).toBe(200);
    expect(upstream.clients).toEqual(['gateway', 'gateway']);
  });
});
