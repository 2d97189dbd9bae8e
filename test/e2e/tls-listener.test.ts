import { execFile, spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLAIN_HTTP_MESSAGE } from '../../src/errors/gateway-error.js';
import { createTestCa, LOOPBACK } from '../support/certificates.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { startGateway, writeConfig, type GatewayProcess } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { rawRequest } from '../support/raw-request.js';
import { runCli } from '../support/run-cli.js';
import { servedSerial } from '../support/tls-client.js';

const run = promisify(execFile);

describe('serve with server.tls', () => {
  const ca = createTestCa();
  const first = ca.issue('first', { commonName: 'localhost', ...LOOPBACK });
  const second = ca.issue('second', { commonName: 'localhost', ...LOOPBACK });
  const dir = mkdtempSync(join(tmpdir(), 'gateway-tls-listener-'));
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  afterAll(() => {
    ca.remove();
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints an https curl line that works as printed, and on SIGHUP refuses a mismatched pair and then takes a good one', async () => {
    copyFileSync(first.certFile, certFile);
    copyFileSync(first.keyFile, keyFile);
    const gateway = await startGateway(
      gatewayYaml({
        config: {
          server: { tls: { certFile, keyFile } },
          credentials: { bootstrap: { enabled: true } },
        },
      }),
    );
    try {
      const line = /try:\s+curl --cacert '([^']+)' -u '([^']+)' (https:\/\/\S+)\n/;
      // Written to stderr once the port is open, maybe after the log line that said so.
      const printed = await new Promise<RegExpExecArray>((resolve) => {
        const check = (): void => {
          const match = line.exec(gateway.output());
          if (match === null) return;
          gateway.child.stderr?.off('data', check);
          resolve(match);
        };
        gateway.child.stderr?.on('data', check);
        check();
      });
      // As printed: the server's own certificate is the trust anchor (no CA file given).
      expect(printed[1]).toBe(certFile);
      const { stdout } = await run('curl', [
        '-sS',
        '--cacert',
        printed[1] ?? '',
        '-u',
        printed[2] ?? '',
        printed[3] ?? '',
      ]);
      expect(JSON.parse(stdout)).toMatchObject({ result: 'success', status: 200 });

      // The watch would see these copies too: both outcomes are awaited by what they log.
      copyFileSync(second.certFile, certFile);
      copyFileSync(ca.strayKey('stray'), keyFile);
      gateway.child.kill('SIGHUP');
      await gateway.waitForLog('TLS certificate not reloaded; the served one stays', {
        reason: 'the key does not match the certificate',
      });
      await gateway.waitForLog('configuration reloaded');
      expect(await servedSerial(gateway.port, ca.cert)).toBe(first.serial);

      copyFileSync(second.keyFile, keyFile);
      gateway.child.kill('SIGHUP');
      await gateway.waitForLog('TLS certificate loaded', { serial: second.serial });
      expect(await servedSerial(gateway.port, ca.cert)).toBe(second.serial);
    } finally {
      expect(await gateway.stop()).toBe(0);
    }
  });

  /** A TCP connection that never sends a byte: no ClientHello, so no handshake. */
  const silentConnection = (port: number): Promise<{ socket: Socket; closed: Promise<void> }> =>
    new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      const closed = new Promise<void>((done) => socket.once('close', () => done()));
      socket.once('connect', () => resolve({ socket, closed }));
      socket.once('error', reject);
    });

  const startSilent = async (server: Record<string, number>) => {
    copyFileSync(first.certFile, certFile);
    copyFileSync(first.keyFile, keyFile);
    const gateway = await startGateway(
      gatewayYaml({ config: { server: { ...server, tls: { certFile, keyFile } } } }),
    );
    const silent = await silentConnection(gateway.port);
    // Accepted in order: once a later connection has been served, the silent one is the
    // server's too (not still in the listen backlog).
    expect(await servedSerial(gateway.port, ca.cert)).toBe(first.serial);
    return { gateway, silent };
  };

  it('closes a connection that does not finish its TLS handshake within server.headersTimeoutMs', async () => {
    const { gateway, silent } = await startSilent({ headersTimeoutMs: 300 });
    try {
      await silent.closed;
      // Nothing was written into a connection that has no TLS session (no HTTP 400 in clear).
      expect(silent.socket.bytesRead).toBe(0);
    } finally {
      expect(await gateway.stop()).toBe(0);
    }
  });

  it('exits on SIGTERM at the drain deadline while a connection is still in its handshake', async () => {
    // The handshake timeout far beyond the test's own: only the drain deadline can end it.
    const { gateway, silent } = await startSilent({
      headersTimeoutMs: 600_000,
      requestTimeoutMs: 600_000,
      drainTimeoutMs: 200,
    });
    expect(await gateway.stop()).toBe(0);
    await silent.closed;
  });

  it('refuses to start with a key that is not the certificate’s, naming server.tls, without a stack', async () => {
    const stray = ca.strayKey('stray-start');
    const file = writeConfig(
      gatewayYaml({ config: { server: { tls: { certFile: first.certFile, keyFile: stray } } } }),
    );
    const result = await runCli(['serve', '--config', file, '--listen', '127.0.0.1:0']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('- server.tls: the key does not match the certificate\n');
    expect(`${result.stdout}${result.stderr}`).not.toMatch(/\n\s+at /);
  });
});

/** `openssl s_client` to 127.0.0.1:`port` with `args`, its stdin at EOF: exit code and output. */
function sClient(
  port: number,
  args: readonly string[],
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      'openssl',
      ['s_client', '-connect', `127.0.0.1:${port}`, '-servername', 'localhost', ...args],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('close', (code) => resolve({ code, output }));
  });
}

/**
 * A TLS 1.2 connection that, once established, asks to renegotiate (as `R` in openssl
 * s_client does): how that ended, the error's code or 'renegotiated'.
 */
function renegotiation(port: number, ca: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connectTls({
      host: '127.0.0.1',
      port,
      ca,
      servername: 'localhost',
      maxVersion: 'TLSv1.2',
    });
    socket.once('secureConnect', () => {
      socket.renegotiate({ rejectUnauthorized: true }, (error) => {
        if (error === null) {
          resolve('renegotiated');
          socket.destroy();
        }
      });
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      resolve(error.code ?? error.message);
      socket.destroy();
    });
  });
}

describe('the TLS listener on TLS 1.2', () => {
  // RSA, so that the suites of RSA key exchange can be offered too (an ECDSA certificate
  // rules those out whatever the server allows).
  const ca = createTestCa();
  const rsa = ca.issue('rsa', { commonName: 'localhost', ...LOOPBACK, keyAlgorithm: 'RSA' });
  const next = ca.issue('rsa-next', { commonName: 'localhost', ...LOOPBACK, keyAlgorithm: 'RSA' });
  const dir = mkdtempSync(join(tmpdir(), 'gateway-tls-policy-'));
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  let gateway: GatewayProcess;
  beforeAll(async () => {
    copyFileSync(rsa.certFile, certFile);
    copyFileSync(rsa.keyFile, keyFile);
    gateway = await startGateway(
      gatewayYaml({ config: { server: { tls: { certFile, keyFile } } } }),
    );
  });
  afterAll(async () => {
    expect(await gateway?.stop()).toBe(0);
    ca.remove();
    rmSync(dir, { recursive: true, force: true });
  });

  // CBC (Lucky Thirteen), and key exchange without forward secrecy (static RSA, or DHE, which
  // Node serves without parameters anyway).
  const refused = [
    'AES128-SHA256',
    'ECDHE-RSA-AES128-SHA256',
    'ECDHE-RSA-AES256-SHA',
    'AES128-GCM-SHA256',
    'DHE-RSA-AES128-GCM-SHA256',
  ];

  const expectRefused = async (cipher: string): Promise<void> => {
    const { code, output } = await sClient(gateway.port, ['-tls1_2', '-cipher', cipher]);
    expect({ cipher, code, refused: output.includes('alert handshake failure') }).toEqual({
      cipher,
      code: 1,
      refused: true,
    });
  };

  it(`fails the handshake of openssl s_client -tls1_2 offering only ${refused.join(', ')}`, async () => {
    for (const cipher of refused) await expectRefused(cipher);
  });

  it.each([
    'ECDHE-RSA-AES128-GCM-SHA256',
    'ECDHE-RSA-AES256-GCM-SHA384',
    'ECDHE-RSA-CHACHA20-POLY1305',
  ])('completes a TLS 1.2 handshake with %s', async (cipher) => {
    const { code, output } = await sClient(gateway.port, [
      '-tls1_2',
      '-cipher',
      cipher,
      '-CAfile',
      ca.certFile,
    ]);
    expect(code).toBe(0);
    expect(output).toContain(`Cipher is ${cipher}`);
    expect(output).toContain('Verify return code: 0 (ok)');
  });

  it('serves a TLS 1.2 AES-GCM client (curl) and a TLS 1.3 one', async () => {
    for (const version of [
      ['--tls-max', '1.2', '--ciphers', 'ECDHE-RSA-AES128-GCM-SHA256'],
      ['--tlsv1.3'],
    ]) {
      const { stdout } = await run('curl', [
        '-sS',
        '--cacert',
        ca.certFile,
        ...version,
        '-o',
        '/dev/null',
        '-w',
        '%{http_code}',
        `https://localhost:${gateway.port}/nowhere`,
        '--resolve',
        `localhost:${gateway.port}:127.0.0.1`,
      ]);
      expect(stdout).toBe('404');
    }
  });

  it('refuses a renegotiation the client starts (no_renegotiation), and serves on', async () => {
    expect(await renegotiation(gateway.port, ca.cert)).toBe('ERR_SSL_NO_RENEGOTIATION');
    expect(await servedSerial(gateway.port, ca.cert)).toBe(rsa.serial);
  });

  it('keeps refusing both with the certificate a SIGHUP put in service', async () => {
    copyFileSync(next.certFile, certFile);
    copyFileSync(next.keyFile, keyFile);
    gateway.child.kill('SIGHUP');
    await gateway.waitForLog('TLS certificate loaded', { serial: next.serial });
    expect(await servedSerial(gateway.port, ca.cert)).toBe(next.serial);
    for (const cipher of refused) await expectRefused(cipher);
    expect(await renegotiation(gateway.port, ca.cert)).toBe('ERR_SSL_NO_RENEGOTIATION');
  });
});

describe('plain HTTP to the TLS port', () => {
  const ca = createTestCa();
  const pair = ca.issue('plain', { commonName: 'localhost', ...LOOPBACK });
  let gateway: GatewayProcess;
  beforeAll(async () => {
    gateway = await startGateway(
      gatewayYaml({
        config: {
          server: { tls: { certFile: pair.certFile, keyFile: pair.keyFile } },
          logging: { level: 'info' },
        },
      }),
    );
  });
  afterAll(async () => {
    expect(await gateway?.stop()).toBe(0);
    ca.remove();
  });

  it('answers a raw plain-HTTP request 400 bad_request saying to use https, with Connection: close, and closes', async () => {
    const answer = await rawRequest(
      gateway.port,
      'GET /accounts HTTP/1.1\r\nHost: localhost\r\n\r\n',
      { untilClosed: true },
    );
    expectGatewayError(answer, 'bad_request', { message: PLAIN_HTTP_MESSAGE });
    expect(answer.headers.connection).toBe('close');
    expect(answer.closedByServer).toBe(true);
    // Counted and logged as every request the gateway answers, of no route.
    await gateway.waitForLog('request', {
      route: 'none',
      status: 400,
      error_code: 'bad_request',
      request_id: answer.headers['x-request-id'],
    });
  });

  it('answers curl http:// with the 400 and its message', async () => {
    const { stdout } = await run('curl', [
      '-sS',
      '-w',
      '\n%{http_code}',
      `http://127.0.0.1:${gateway.port}/accounts`,
    ]);
    const [body = '', status] = stdout.split('\n');
    expect(status).toBe('400');
    expect(JSON.parse(body)).toMatchObject({
      status: 400,
      error: { code: 'bad_request', message: PLAIN_HTTP_MESSAGE },
    });
  });

  it('still serves TLS on the same port after them', async () => {
    expect(await servedSerial(gateway.port, ca.cert)).toBe(pair.serial);
  });
});
