import type { GatewayConfig } from '../config/config-schema.js';
import type { CredentialStore, KeyRecord } from '../credentials/credential-store.js';
import { generateKeyPair, randomBase62 } from '../credentials/generate-key-pair.js';
import type { SecretHasher } from '../credentials/secret-hasher.js';

/**
 * A key pair made at start for the zero-setup demo (memory store only), shown once; with it a
 * web-app user of the same subject, to sign in to the portal with (none when the seed already
 * has a user of that name).
 */
export interface BootstrapPair {
  readonly key: string;
  readonly secret: string;
  readonly subject: string;
  readonly user?: { readonly username: string; readonly password: string } | undefined;
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
  const { username } = config.credentials.bootstrap;
  // 24 base62 (~143 bits): shown once like the secret, typed or pasted into the sign-in form.
  const password = randomBase62(24);
  const added = await store.addUser({
    username,
    subject,
    passwordHash: await hasher.hash(password),
    createdAt: record.createdAt,
    scopes: config.credentials.bootstrap.scopes,
  });
  return { key, secret, subject, ...(added ? { user: { username, password } } : {}) };
}
