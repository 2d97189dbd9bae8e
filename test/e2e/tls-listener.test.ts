import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestCa, LOOPBACK } from '../support/certificates.js';
import { startGateway, writeConfig } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
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
