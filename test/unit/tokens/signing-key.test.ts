import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../../support/temp-dirs.js';
import type { TokensConfig } from '../../../src/config/config-schema.js';
import { parseConfig } from '../../../src/config/load-config.js';
import { createSigningKeys, GENERATED_KEY_WARNING } from '../../../src/tokens/signing-key.js';

/** The default token settings: ES256, no key. */
const BASE = parseConfig('', 'inline.yaml').tokens;

const PEM = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();

/** A resolver and the warnings it gave. */
function keys(): { resolve: (tokens: TokensConfig) => string; warnings: string[] } {
  const warnings: string[] = [];
  const signingKeys = createSigningKeys((message) => warnings.push(message));
  return { resolve: (tokens) => signingKeys.resolve(tokens).signingKey, warnings };
}

describe('the signing key', () => {
  it('is the configured one, with no warning', () => {
    const { resolve, warnings } = keys();
    expect(resolve({ ...BASE, signingKey: PEM })).toBe(PEM);
    expect(warnings).toEqual([]);
  });

  it('is read from signingKeyFile, and the file is not read again by whoever signs', () => {
    const file = join(tempDir('signing-key-'), 'signing.pem');
    writeFileSync(file, PEM);
    const resolved = createSigningKeys(() => undefined).resolve({ ...BASE, signingKeyFile: file });
    expect(resolved.signingKey).toBe(PEM);
    expect(resolved.signingKeyFile).toBeUndefined();
  });

  it('is generated for the algorithm when none is configured, with a warning', () => {
    const { resolve, warnings } = keys();
    expect(createPrivateKey(resolve(BASE)).asymmetricKeyType).toBe('ec');
    expect(createPrivateKey(resolve({ ...BASE, algorithm: 'EdDSA' })).asymmetricKeyType).toBe(
      'ed25519',
    );
    expect(warnings).toEqual([GENERATED_KEY_WARNING, GENERATED_KEY_WARNING]);
  });

  it('once generated, stays the same (warned once) while the algorithm does: a reload voids no token', () => {
    const { resolve, warnings } = keys();
    const first = resolve(BASE);
    expect(resolve({ ...BASE, lifetimeSec: 60 })).toBe(first);
    expect(warnings).toEqual([GENERATED_KEY_WARNING]);
  });

  it('is generated anew by another resolver: two starts sign with two keys', () => {
    expect(keys().resolve(BASE)).not.toBe(keys().resolve(BASE));
  });
});
