import bcrypt from 'bcrypt';
import { afterEach, describe, expect, it } from 'vitest';
import { readBcryptHash } from '../../src/credentials/secret-hasher.js';
import { writeConfig } from '../support/gateway-process.js';
import { gatewayYaml } from '../support/gateway-yaml.js';
import { killCliChildren, runCli } from '../support/run-cli.js';

// `accounts-gateway hash-password` (issue 17): a bcrypt hash for the web application to
// store, made by the built CLI from a secret piped on stdin (never from argv).

afterEach(() => killCliChildren());

const SECRET = 'correct horse battery';

/** The one line printed, checked to be a bcrypt hash of SECRET; its cost. */
async function hashedCost(stdout: string): Promise<number | undefined> {
  expect(stdout).toMatch(/^\$2b\$\d{2}\$[./A-Za-z0-9]{53}\n$/);
  const hash = stdout.trimEnd();
  expect(await bcrypt.compare(SECRET, hash)).toBe(true);
  expect(await bcrypt.compare(`${SECRET}!`, hash)).toBe(false);
  return readBcryptHash(hash)?.cost;
}

describe('hash-password', () => {
  it('prints a bcrypt hash of the secret read from stdin at the configured credentials.bcryptCost', async () => {
    const config = writeConfig(gatewayYaml({ config: { credentials: { bcryptCost: 5 } } }));
    const result = await runCli(['hash-password', '--config', config], { stdin: `${SECRET}\n` });
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    expect(await hashedCost(result.stdout)).toBe(5);
  });

  it('hashes at --cost, whatever the configuration says', async () => {
    const config = writeConfig(gatewayYaml({ config: { credentials: { bcryptCost: 5 } } }));
    const result = await runCli(['hash-password', '--config', config, '--cost', '4'], {
      stdin: SECRET,
    });
    expect(result.code).toBe(0);
    expect(await hashedCost(result.stdout)).toBe(4);
  });

  it("refuses a --cost outside credentials.bcryptCost's 4 to 15, or not in decimal digits, with exit 2 before reading a secret", async () => {
    for (const cost of ['3', '16', '31', '1e1', '0x5', ' 5', '5.0', '']) {
      expect(await runCli(['hash-password', '--cost', cost], { stdin: SECRET })).toEqual({
        code: 2,
        stdout: '',
        stderr: 'accounts-gateway: --cost must be a whole number from 4 to 15\n',
      });
    }
  });

  it('refuses a secret shorter than 8 characters or over 72 bytes with exit 2, no hash and a sentence about the secret', async () => {
    const stderrs: string[] = [];
    for (const secret of ['short', 'é'.repeat(37)]) {
      const result = await runCli(['hash-password', '--cost', '4'], { stdin: secret });
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      stderrs.push(result.stderr);
    }
    expect(stderrs).toEqual([
      'accounts-gateway: the secret must have at least 8 characters\n',
      'accounts-gateway: the secret must be at most 72 bytes\n',
    ]);
  });

  it('takes no secret on argv: a positional secret is an unknown argument (exit 2)', async () => {
    const result = await runCli(['hash-password', '--cost', '4', SECRET], { stdin: SECRET });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
  });
});
