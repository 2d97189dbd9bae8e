import type { GatewayConfig } from '../config/config-schema.js';
import type { CredentialStore, KeyRecord } from '../credentials/credential-store.js';
import { generateKeyPair } from '../credentials/generate-key-pair.js';
import type { SecretHasher } from '../credentials/secret-hasher.js';

/** A key pair made at start for the zero-setup demo (memory store only), shown once. */
export interface BootstrapPair {
  readonly key: string;
  readonly secret: string;
  readonly subject: string;
}

export async function makeBootstrapPair(
  config: GatewayConfig,
  store: CredentialStore,
  hasher: SecretHasher,
  now: () => number,
): Promise<BootstrapPair | undefined> {
  if (!config.credentials.bootstrap.enabled || config.credentials.store !== 'memory')
    return undefined;
  const subject = config.credentials.bootstrap.subject;
  const { key, secret } = generateKeyPair(subject);
  const record: KeyRecord = {
    key,
    subject,
    secretHash: await hasher.hash(secret),
    label: 'bootstrap',
    status: 'active',
    createdAt: new Date(now()).toISOString(),
    scopes: config.credentials.bootstrap.scopes,
  };
  await store.createKey(record, Number.MAX_SAFE_INTEGER);
  return { key, secret, subject };
}
