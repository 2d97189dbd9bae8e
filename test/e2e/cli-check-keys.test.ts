import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createTestCa, LOOPBACK } from '../support/certificates.js';
import { writeConfig } from '../support/gateway-process.js';
import { gatewayYaml, type GatewayConfigInput } from '../support/gateway-yaml.js';
import { killCliChildren, runCli, type CliResult } from '../support/run-cli.js';

afterEach(() => killCliChildren());

function check(config: GatewayConfigInput): Promise<CliResult> {
  return runCli(['check', '--config', writeConfig(gatewayYaml({ config }))]);
}

describe('check with key material', () => {
  it('exits 2 naming the setting when the signing key cannot be read', async () => {
    const result = await check({ tokens: { signingKey: 'not a PEM' } });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/- tokens: /);
  });

  it('exits 2 naming the issuer when its public key file is missing', async () => {
    const result = await check({
      auth: {
        bearer: {
          issuers: [{ name: 'x', algorithms: ['RS256'], publicKeyFile: './missing.pem' }],
        },
      },
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/- auth\.bearer\.issuers\[0\]: .*missing\.pem/);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('exits 2 naming the upstream when its TLS CA file is missing', async () => {
    const result = await check({
      upstreams: {
        accounts: { url: 'https://127.0.0.1:8443', tls: { caFile: './missing-ca.pem' } },
      },
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /- upstreams\.accounts\.tls\.caFile: cannot read \/\S*\/missing-ca\.pem \(ENOENT\)\n/,
    );
  });
});

describe('check with TLS files', () => {
  const ca = createTestCa();
  afterAll(() => ca.remove());
  const server = ca.issue('server', { commonName: 'localhost', ...LOOPBACK });
  const client = ca.issue('client', { commonName: 'gateway', client: true });
  const expired = ca.issue('expired', {
    commonName: 'localhost',
    startDate: '20200101000000Z',
    endDate: '20200102000000Z',
  });
  const stray = ca.strayKey('stray');
  const file = (name: string, text: string): string => {
    const path = join(ca.dir, name);
    writeFileSync(path, text);
    return path;
  };
  const upstreamTls = (tls: Record<string, string>): GatewayConfigInput => ({
    upstreams: { accounts: { url: 'https://127.0.0.1:8443', tls } },
  });

  /** What check says of `config`: its exit code, and the problems it listed. */
  const problems = async (config: GatewayConfigInput) => {
    const result = await check(config);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    return {
      code: result.code,
      lines: result.stderr.split('\n').filter((l) => l.startsWith('  - ')),
    };
  };

  it('refuses an upstream client key that is not its certificate’s, naming the setting', async () => {
    const tls = { certFile: client.certFile, keyFile: stray };
    expect(await problems(upstreamTls(tls))).toEqual({
      code: 2,
      lines: [
        `  - upstreams.accounts.tls.keyFile: the key does not match the certificate (certFile ${client.certFile}, keyFile ${stray})`,
      ],
    });
  });

  it('refuses an upstream CA file that holds no certificate', async () => {
    const caFile = file('not-a-ca.pem', client.key);
    expect(await problems(upstreamTls({ caFile }))).toEqual({
      code: 2,
      lines: [`  - upstreams.accounts.tls.caFile: ${caFile} holds no PEM certificate`],
    });
  });

  it('refuses every server.tls pair that serve would refuse, saying why', async () => {
    const encrypted = file(
      'encrypted.key',
      '-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIBvTBXBgkqhkiG9w0BBQ0wSjApBgkqhkiG\n-----END ENCRYPTED PRIVATE KEY-----\n',
    );
    const missing = join(ca.dir, 'missing.pem');
    const cases: [{ certFile: string; keyFile: string }, string][] = [
      [
        { certFile: missing, keyFile: server.keyFile },
        `server.tls.certFile: cannot read ${missing} (ENOENT)`,
      ],
      [
        { certFile: server.certFile, keyFile: stray },
        'server.tls: the key does not match the certificate',
      ],
      [
        { certFile: expired.certFile, keyFile: expired.keyFile },
        'server.tls: the certificate has expired',
      ],
      [
        { certFile: server.keyFile, keyFile: server.certFile },
        'server.tls: the certificate file holds no PEM certificate',
      ],
      [
        { certFile: server.certFile, keyFile: encrypted },
        'server.tls: the key file holds an encrypted key (the gateway reads unencrypted PEM keys only)',
      ],
    ];
    for (const [tls, line] of cases)
      expect(await problems({ server: { tls } })).toEqual({ code: 2, lines: [`  - ${line}`] });
  });

  it('refuses a Redis CA file that is missing or empty, naming the setting', async () => {
    const redis = (caFile: string): GatewayConfigInput => ({
      credentials: { store: 'redis', redis: { url: 'rediss://127.0.0.1:6380', tls: { caFile } } },
    });
    const missing = join(ca.dir, 'missing-ca.pem');
    expect(await problems(redis(missing))).toEqual({
      code: 2,
      lines: [`  - credentials.redis.tls.caFile: cannot read ${missing} (ENOENT)`],
    });
    const empty = file('empty-ca.pem', '');
    expect(await problems(redis(empty))).toEqual({
      code: 2,
      lines: [`  - credentials.redis.tls.caFile: ${empty} holds no PEM certificate`],
    });
  });

  it('names the Redis CA setting when keys list cannot read its file', async () => {
    const missing = join(ca.dir, 'missing-ca.pem');
    const configFile = writeConfig(
      gatewayYaml({
        config: {
          credentials: {
            store: 'redis',
            redis: { url: 'rediss://127.0.0.1:6380', tls: { caFile: missing } },
          },
        },
      }),
    );
    const result = await runCli(['keys', 'list', '--subject', 'x', '--config', configFile]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `accounts-gateway: credentials.redis.tls.caFile: cannot read ${missing} (ENOENT)\n`,
    );
  });
});
