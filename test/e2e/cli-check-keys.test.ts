import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CLI, writeConfig } from '../support/gateway-process.js';

function check(yaml: string): { status: number | null; stderr: string } {
  const run = spawnSync(process.execPath, [CLI, 'check', '--config', writeConfig(yaml)], {
    encoding: 'utf8',
  });
  return { status: run.status, stderr: run.stderr };
}

describe('check with key material', () => {
  it('exits 2 naming the setting when the signing key cannot be read', () => {
    const result = check('tokens:\n  signingKey: "not a PEM"\n');
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/- tokens: /);
  });

  it('exits 2 naming the issuer when its public key file is missing', () => {
    const result = check(
      'auth:\n  bearer:\n    issuers: [{ name: x, algorithms: [RS256], publicKeyFile: ./missing.pem }]\n',
    );
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/- auth\.bearer\.issuers\[0\]: .*missing\.pem/);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});
