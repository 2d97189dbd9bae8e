import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createGateway, type Gateway } from '../../src/gateway/gateway.js';
import { parseConfig } from '../../src/config/load-config.js';
import { PLAIN_HTTP_MESSAGE } from '../../src/errors/gateway-error.js';
import { capturedLogger, type CapturedLogger } from '../support/captured-logger.js';
import { createTestCa, LOOPBACK, type IssuedCertificate } from '../support/certificates.js';
import { expectGatewayError } from '../support/expect-gateway-error.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { sample } from '../support/scrape-metric.js';
import { send } from '../support/send.js';
import { handshake, servedSerial } from '../support/tls-client.js';

const ca = createTestCa();
const first = ca.issue('first', { commonName: 'localhost', ...LOOPBACK });
const second = ca.issue('second', { commonName: 'localhost', ...LOOPBACK });
const third = ca.issue('third', { commonName: 'localhost', ...LOOPBACK });
const expired = ca.issue('expired', {
  commonName: 'localhost',
  ...LOOPBACK,
  startDate: '20200101000000Z',
  endDate: '20200102000000Z',
});
afterAll(() => ca.remove());

const notAfterSec = (issued: IssuedCertificate): number =>
  Date.parse(new X509Certificate(issued.cert).validTo) / 1000;

describe('the API port over TLS', () => {
  let dir: string;
  let files: { certFile: string; keyFile: string };
  let log: CapturedLogger;
  let gateway: Gateway;
  let port: number;

  /** Puts a pair in place the way a careful deploy does: each file renamed over the old one. */
  const install = (cert: string, key: string): void => {
    copyFileSync(cert, join(dir, 'cert.tmp'));
    copyFileSync(key, join(dir, 'key.tmp'));
    renameSync(join(dir, 'cert.tmp'), files.certFile);
    renameSync(join(dir, 'key.tmp'), files.keyFile);
  };
  const config = (tls = files) =>
    parseConfig(
      gatewayYaml({
        config: {
          server: { host: '127.0.0.1', port: 0, tls },
          admin: { enabled: false },
          logging: { level: 'info' },
        },
      }),
      'tls.yaml',
    );

  afterEach(async () => {
    await gateway.close();
    rmSync(dir, { recursive: true, force: true });
  });
  /** A folder `name` of `dir` holding `issued` as cert.pem and key.pem. */
  const folderWith = (name: string, issued: IssuedCertificate): string => {
    const folder = join(dir, name);
    mkdirSync(folder);
    copyFileSync(issued.certFile, join(folder, 'cert.pem'));
    copyFileSync(issued.keyFile, join(folder, 'key.pem'));
    return folder;
  };
  /** Starts on the first pair, at dir/cert.pem unless `layout` puts it elsewhere. */
  const start = async (layout?: () => string): Promise<void> => {
    dir = mkdtempSync(join(tmpdir(), 'gateway-live-tls-'));
    const folder = layout?.() ?? dir;
    files = { certFile: join(folder, 'cert.pem'), keyFile: join(folder, 'key.pem') };
    if (layout === undefined) install(first.certFile, first.keyFile);
    log = capturedLogger();
    gateway = await createGateway(config(), { logger: log.logger });
    port = (await gateway.listen()).port;
  };

  it('answers over TLS 1.3 and 1.2, refuses TLS 1.1, and answers plain HTTP 400', async () => {
    await start();
    const answer = await send(`https://127.0.0.1:${String(port)}`, '/nowhere', { ca: ca.cert });
    expect(answer.status).toBe(404);
    expect(await handshake(port, ca.cert)).toMatchObject({ ok: true, protocol: 'TLSv1.3' });
    expect(await handshake(port, ca.cert, { maxVersion: 'TLSv1.2' })).toMatchObject({
      ok: true,
      protocol: 'TLSv1.2',
    });
    // The client side allows TLS 1.1 (security level 0), so only the server can refuse it.
    const old = await handshake(port, ca.cert, {
      minVersion: 'TLSv1.1',
      maxVersion: 'TLSv1.1',
      ciphers: 'DEFAULT@SECLEVEL=0',
    });
    // The server's protocol_version alert (RFC 8446 §6.2), not a refusal of the client's own.
    expect(old).toMatchObject({ ok: false, code: 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION' });
    expectGatewayError(await send(`http://127.0.0.1:${String(port)}`, '/nowhere'), 'bad_request', {
      message: PLAIN_HTTP_MESSAGE,
    });
  });

  it('serves a new pair once its files change, and logs it', async () => {
    await start();
    expect(await servedSerial(port, ca.cert)).toBe(first.serial);
    install(second.certFile, second.keyFile);
    await log.until('TLS certificate loaded', { serial: second.serial, trigger: 'file change' });
    expect(await servedSerial(port, ca.cert)).toBe(second.serial);
    const metrics = await gateway.metrics.scrape();
    expect(sample(metrics, 'gateway_tls_certificate_not_after_seconds')).toBe(notAfterSec(second));
    expect(sample(metrics, 'gateway_tls_reloads_total{outcome="loaded"}')).toBe(1);
  });

  it('keeps serving the old pair when a reload finds a key of another certificate, and says why', async () => {
    await start();
    install(second.certFile, ca.strayKey('stray'));
    await gateway.reload(config());
    const refused = await log.until('TLS certificate not reloaded; the served one stays');
    expect(refused).toMatchObject({
      level: 50,
      reason: 'the key does not match the certificate',
      cert_file: files.certFile,
      key_file: files.keyFile,
    });
    expect(await servedSerial(port, ca.cert)).toBe(first.serial);
    const metrics = await gateway.metrics.scrape();
    expect(sample(metrics, 'gateway_tls_certificate_not_after_seconds')).toBe(notAfterSec(first));
    expect(sample(metrics, 'gateway_tls_reloads_total{outcome="refused"}')).toBeGreaterThan(0);
    // No line carries a byte of key material.
    const key = second.key.split('\n')[1] ?? '';
    expect(JSON.stringify(log.lines)).not.toContain(key);
  });

  it('keeps watching after the certificate’s folder is replaced by a rename', async () => {
    await start(() => folderWith('current', first));
    renameSync(join(dir, 'current'), join(dir, 'old'));
    renameSync(folderWith('next', second), join(dir, 'current'));
    await log.until('TLS certificate loaded', { serial: second.serial, trigger: 'file change' });
    // The folder now named current is another one than the watch was first opened on.
    install(third.certFile, third.keyFile);
    await log.until('TLS certificate loaded', { serial: third.serial, trigger: 'file change' });
    expect(await servedSerial(port, ca.cert)).toBe(third.serial);
  });

  it('sees a symlink in the path pointed at another folder, as a deploy swaps releases', async () => {
    await start(() => {
      folderWith('v1', first);
      symlinkSync('v1', join(dir, 'current'));
      return join(dir, 'current');
    });
    folderWith('v2', second);
    // ln -sfn v2 current.tmp && mv -T current.tmp current
    symlinkSync('v2', join(dir, 'current.tmp'));
    renameSync(join(dir, 'current.tmp'), join(dir, 'current'));
    await log.until('TLS certificate loaded', { serial: second.serial, trigger: 'file change' });
    expect(await servedSerial(port, ca.cert)).toBe(second.serial);
  });

  it('keeps serving the old pair when the files change to an expired certificate', async () => {
    await start();
    install(expired.certFile, expired.keyFile);
    await log.until('TLS certificate not reloaded; the served one stays', {
      reason: 'the certificate has expired',
      trigger: 'file change',
    });
    expect(await servedSerial(port, ca.cert)).toBe(first.serial);
  });

  it('keeps serving through a reload that names files in a folder that does not exist, and takes the next good one', async () => {
    await start();
    const missing = join(dir, 'missing');
    await gateway.reload(
      config({ certFile: join(missing, 'cert.pem'), keyFile: join(missing, 'key.pem') }),
    );
    expect(await log.until('TLS certificate not reloaded; the served one stays')).toMatchObject({
      reason: 'cannot read the certificate file (ENOENT)',
    });
    expect(await log.until('TLS certificate folder not watched')).toMatchObject({
      folder: missing,
      reason: 'ENOENT',
    });
    expect(await servedSerial(port, ca.cert)).toBe(first.serial);
    await gateway.reload(config({ certFile: second.certFile, keyFile: second.keyFile }));
    await log.until('TLS certificate loaded', { serial: second.serial, trigger: 'reload' });
    expect(await servedSerial(port, ca.cert)).toBe(second.serial);
  });

  it('reads the files named by a reloaded configuration', async () => {
    await start();
    await gateway.reload(config({ certFile: second.certFile, keyFile: second.keyFile }));
    await log.until('TLS certificate loaded', { serial: second.serial, trigger: 'reload' });
    expect(await servedSerial(port, ca.cert)).toBe(second.serial);
  });
});

describe('the API port TLS at start', () => {
  it('refuses to start with a key that is not the certificate’s, naming the files', async () => {
    const config = parseConfig(
      gatewayYaml({
        config: {
          server: {
            host: '127.0.0.1',
            port: 0,
            tls: { certFile: first.certFile, keyFile: second.keyFile },
          },
          admin: { enabled: false },
        },
      }),
      'tls.yaml',
    );
    await expect(createGateway(config, { logger: capturedLogger().logger })).rejects.toThrow(
      `server.tls: the key does not match the certificate (certFile ${first.certFile}, keyFile ${second.keyFile})`,
    );
  });
});
