import { afterEach, describe, expect, it } from 'vitest';
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
    expect(result.stderr).toMatch(/- upstreams\.accounts\.tls: .*missing-ca\.pem/);
  });
});
