import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load-config.js';
import { verifiedCacheSettings } from '../../../src/gateway/verified-cache-settings.js';

// Which reloads keep the verified caches (gateway/verified-cache-settings.ts): one string per cache, compared.

const dir = mkdtempSync(join(tmpdir(), 'gateway-test-cache-settings-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const publicKey = () =>
  generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({
    type: 'spki',
    format: 'pem',
  }) as string;
const keyFile = join(dir, 'issuer.pem');
writeFileSync(keyFile, publicKey());

const settingsOf = (extra: string) =>
  verifiedCacheSettings(
    parseConfig(
      `auth:\n  bearer:\n    issuers:\n      - name: partner\n        issuer: https://partner.example\n        algorithms: [ES256]\n        publicKeyFile: ${keyFile}\n${extra}`,
      'cache-settings.yaml',
    ),
  );

describe('verifiedCacheSettings', () => {
  it('is the same for both caches when only settings outside them change', () => {
    const before = settingsOf('');
    const after = settingsOf(
      'tokens:\n  lifetimeSec: 600\nlockout:\n  initialLockSec: 5\nkeys:\n  maxActivePerSubject: 3\n',
    );
    expect(after).toEqual(before);
  });

  it('changes the Basic one alone for a Basic cache setting', () => {
    const before = settingsOf('');
    const after = settingsOf('  basic:\n    cache:\n      ttlSec: 5\n');
    expect([after.basic === before.basic, after.bearer === before.bearer]).toEqual([false, true]);
  });

  it('changes the Bearer one alone for the gateway’s token audience, the clock tolerance, or a new key in an issuer’s key file', () => {
    const before = settingsOf('');
    for (const after of [
      settingsOf('tokens:\n  audience: other\n'),
      settingsOf('    clockToleranceSec: 0\n'),
      (() => {
        writeFileSync(keyFile, publicKey());
        return settingsOf('');
      })(),
    ]) {
      expect([after.basic === before.basic, after.bearer === before.bearer]).toEqual([true, false]);
    }
  });
});
