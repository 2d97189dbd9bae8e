import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { TokensConfig } from '../config/config-schema.js';

/** The warning a generated key earns: said once per key generated. */
export const GENERATED_KEY_WARNING =
  'tokens are signed with a key generated at start: they stop working on restart and other instances reject them; set tokens.signingKey';

/** Token settings whose signing key is a PEM in hand: no file left to read, nothing to generate. */
export type ResolvedTokensConfig = TokensConfig & { readonly signingKey: string };

/** The configured PEM: tokens.signingKey, else the file tokens.signingKeyFile names; else undefined. */
function configuredSigningKey(tokens: TokensConfig): string | undefined {
  if (tokens.signingKey !== undefined) return tokens.signingKey;
  return tokens.signingKeyFile === undefined
    ? undefined
    : readFileSync(tokens.signingKeyFile, 'utf8');
}

export interface SigningKeys {
  /** The settings with the PEM to sign with: the configured one, or the one generated here. */
  resolve(tokens: TokensConfig): ResolvedTokensConfig;
}

/**
 * The one place a signing key is chosen. Every process of a set must sign with one key, or a
 * token one issued would be refused by the others; and a SIGHUP must not change a generated
 * key (it would void every token issued so far). So a key is generated once, kept while the
 * algorithm stays, and `warn`ed about once each time one is made.
 */
export function createSigningKeys(warn: (message: string) => void): SigningKeys {
  let generated: { algorithm: TokensConfig['algorithm']; pem: string } | undefined;
  return {
    resolve(tokens) {
      let pem = configuredSigningKey(tokens);
      if (pem === undefined) {
        if (generated?.algorithm !== tokens.algorithm) {
          generated = { algorithm: tokens.algorithm, pem: generatePem(tokens.algorithm) };
          warn(GENERATED_KEY_WARNING);
        }
        pem = generated.pem;
      }
      return { ...tokens, signingKey: pem, signingKeyFile: undefined };
    },
  };
}

function generatePem(algorithm: TokensConfig['algorithm']): string {
  const { privateKey } =
    algorithm === 'ES256'
      ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
      : generateKeyPairSync('ed25519');
  return privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
}
