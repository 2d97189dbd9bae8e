import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { EXIT } from '../../../src/commands/cli-error.js';
import { checkKeyMaterial } from '../../../src/commands/check-key-material.js';
import { loadConfigFile } from '../../../src/config/load-config.js';
import { drainProblems, drainSec, EXIT_MARGIN_SEC } from '../../support/drain-budget.js';
import { generateSigningKey } from '../../support/generate-signing-key.js';
import { readSystemdUnit, timeSpanSec, unitValue, unitValues } from '../../support/systemd-unit.js';
import { tempDir } from '../../support/temp-dirs.js';
import { findCommand } from '../../support/find-command.js';

// config/systemd/: the unit, the configuration it names and its environment file, held against
// the gateway (its CLI, its drain, its configuration loader) and, where the machine has it,
// against systemd's own reading of the unit.

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const DIR = join(ROOT, 'config', 'systemd');
const UNIT_FILE = join(DIR, 'accounts-gateway.service');
const CONFIG_FILE = join(DIR, 'gateway.yaml');
const ENV_FILE = join(DIR, 'environment.example');
const unit = readSystemdUnit(UNIT_FILE);
const service = (key: string) => unitValue(unit, 'Service', key);

const SYSTEMD_ANALYZE = findCommand('systemd-analyze') ?? '';
const run = promisify(execFile);

/** The variables of `Environment=` lines (`NAME=value`, one per line here). */
function unitEnvironment(): Record<string, string> {
  return Object.fromEntries(
    unitValues(unit, 'Service', 'Environment').map((entry): [string, string] => {
      const equals = entry.indexOf('=');
      return [entry.slice(0, equals), entry.slice(equals + 1)];
    }),
  );
}

/** `LoadCredential=ID:PATH` → ID → PATH. */
function credentials(): Map<string, string> {
  return new Map(
    unitValues(unit, 'Service', 'LoadCredential').map((entry): [string, string] => {
      const colon = entry.indexOf(':');
      return [entry.slice(0, colon), entry.slice(colon + 1)];
    }),
  );
}

/** The exec form of the Dockerfile's ENTRYPOINT: node, its flags, dist/cli.js. */
function imageEntrypoint(): string[] {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  const line = dockerfile.split('\n').findLast((l) => l.startsWith('ENTRYPOINT ['));
  if (line === undefined) throw new Error('no ENTRYPOINT [...] in the Dockerfile');
  return JSON.parse(line.slice('ENTRYPOINT '.length)) as string[];
}

/**
 * The environment the service runs in, with the secrets it is given made as the file's
 * comments say: the environment file's variables, and $CREDENTIALS_DIRECTORY holding a file
 * per credential.
 */
async function serviceEnvironment(): Promise<Record<string, string>> {
  const dir = tempDir('systemd-credentials-');
  const made: Record<string, string> = {
    'fleet-key': randomBytes(32).toString('base64'),
    'signing-key.pem': (await generateSigningKey()).pem,
  };
  for (const id of credentials().keys()) {
    const content = made[id];
    if (content === undefined) throw new Error(`no test content for the credential ${id}`);
    writeFileSync(join(dir, id), content);
  }
  const fromFile = Object.fromEntries(
    readFileSync(ENV_FILE, 'utf8')
      .split('\n')
      .filter((line) => /^[A-Z_]+=/.test(line))
      .map((line) => [line.slice(0, line.indexOf('=')), randomBytes(32).toString('hex')]),
  );
  return { ...unitEnvironment(), ...fromFile, CREDENTIALS_DIRECTORY: dir };
}

describe('config/systemd/accounts-gateway.service', () => {
  it('runs the built CLI `serve` with the image entrypoint Node flags, on the configuration it names', () => {
    const [node = '', ...rest] = service('ExecStart')?.split(/\s+/) ?? [];
    const [, ...imageArgs] = imageEntrypoint();
    expect(isAbsolute(node)).toBe(true);
    expect(rest.at(-1)).toBe('serve');
    const cli = rest.at(-2) ?? '';
    expect(cli.endsWith('/dist/cli.js')).toBe(true);
    // The same flags before dist/cli.js as the image gives Node.
    expect([...rest.slice(0, -2), 'dist/cli.js']).toEqual(imageArgs);
    expect(service('Type')).toBe('exec');
    const env = unitEnvironment();
    expect(env.GATEWAY_CONFIG).toBe('/etc/accounts-gateway/gateway.yaml');
    expect(service('EnvironmentFile')).toBe('/etc/accounts-gateway/environment');
    for (const path of credentials().values()) expect(isAbsolute(path), path).toBe(true);
  });

  it('reloads with SIGHUP to the main process, once `check` has passed the file', () => {
    const [check, signal] = unitValues(unit, 'Service', 'ExecReload');
    const start = service('ExecStart')?.split(/\s+/) ?? [];
    const cli = start.find((part) => part.endsWith('/dist/cli.js'));
    expect(check?.split(/\s+/)).toEqual([start[0], cli, 'check']);
    // What the gateway, or the primary of its workers, reloads on (test/e2e/reload.test.ts).
    expect(signal).toBe('/bin/kill -HUP $MAINPID');
  });

  it('stops with SIGTERM to the main process and waits past the drain of its configuration', async () => {
    const config = loadConfigFile(CONFIG_FILE, await serviceEnvironment());
    expect(service('KillSignal')).toBe('SIGTERM');
    // With workers, the primary alone gets the signal and drains them; SIGKILL then reaches all.
    expect(service('KillMode')).toBe('mixed');
    expect(drainProblems(config)).toEqual([]);
    expect(timeSpanSec(service('TimeoutStopSec') ?? '')).toBeGreaterThanOrEqual(
      drainSec(config) + EXIT_MARGIN_SEC,
    );
    // Behind a load balancer that reads /readyz, the drain keeps accepting while it notices.
    expect(config.server.shutdownDelayMs).toBeGreaterThan(0);
  });

  it('restarts after a failure, but not for a configuration that does not validate', () => {
    expect(service('Restart')).toBe('on-failure');
    expect(service('RestartPreventExitStatus')?.split(/\s+/)).toContain(String(EXIT.usage));
  });

  it('gives the configuration every variable it reads, and a credential for every key file', async () => {
    const text = readFileSync(CONFIG_FILE, 'utf8');
    const env = await serviceEnvironment();
    const referenced = [...text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]);
    for (const name of referenced) expect(Object.keys(env), `\${${name}}`).toContain(name);
    const files = [...text.matchAll(/\$\{CREDENTIALS_DIRECTORY\}\/([^\s]+)/g)].map((m) => m[1]);
    expect(files.sort()).toEqual([...credentials().keys()].sort());
  });

  it('names a configuration that passes the gateway validation and key checks', async () => {
    const config = loadConfigFile(CONFIG_FILE, await serviceEnvironment());
    expect(config.credentials.store).toBe('redis');
    expect(new URL(config.credentials.redis.url).password).toMatch(/^[0-9a-f]{64}$/);
    expect(config.tokens.signingKeyFile).toBeDefined();
    expect(config.auth.basic.verifiedRecords.fleetKeyFile).toBeDefined();
    await expect(
      checkKeyMaterial(config, CONFIG_FILE, { startFiles: true }),
    ).resolves.toBeUndefined();
  });

  it('runs as a user of its own, with no capability, no new privileges and a read-only system', () => {
    expect(service('DynamicUser')).toBe('yes');
    expect(service('NoNewPrivileges')).toBe('yes');
    expect(service('ProtectSystem')).toBe('strict');
    expect(service('ProtectHome')).toBe('yes');
    expect(service('CapabilityBoundingSet')).toBe('');
    expect(service('SystemCallFilter')).toBe('@system-service');
    // V8's JIT writes machine code: MemoryDenyWriteExecute would stop Node at its start.
    expect(service('MemoryDenyWriteExecute')).toBeUndefined();
  });

  describe.runIf(SYSTEMD_ANALYZE !== '')('read by systemd-analyze', () => {
    /** The unit with this machine's Node, where the file names one it may not have. */
    function unitHere(): string {
      const dir = tempDir('systemd-unit-');
      const file = join(dir, 'accounts-gateway.service');
      const node = service('ExecStart')?.split(/\s+/)[0] ?? '';
      writeFileSync(
        file,
        readFileSync(UNIT_FILE, 'utf8').replaceAll(`${node} `, `${process.execPath} `),
      );
      return file;
    }

    it('verify finds nothing to say of it', async () => {
      const { stdout, stderr } = await run(SYSTEMD_ANALYZE, ['verify', unitHere()]);
      expect(stderr + stdout).toBe('');
    });

    it('security rates its exposure at most 2.0 of 10 (1.5 with systemd 252)', async () => {
      const { stdout } = await run(SYSTEMD_ANALYZE, [
        'security',
        '--offline=yes',
        '--no-pager',
        unitHere(),
      ]);
      const level = /Overall exposure level for [^:]+: ([\d.]+)/.exec(stdout)?.[1];
      expect(Number(level)).toBeLessThanOrEqual(2);
    });
  });
});
