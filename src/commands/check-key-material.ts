import { createKeySource } from '../auth/jwt/key-sources.js';
import type { GatewayConfig } from '../config/config-schema.js';
import { ConfigError } from '../config/load-config.js';
import { createSigningKeys } from '../tokens/signing-key.js';
import { readUpstreamTls } from '../tls/upstream-tls.js';
import { createTokenSigner } from '../tokens/token-signer.js';

/**
 * Loads every key the configuration names (signing key, previous keys, issuers' public
 * keys and files, upstreams' TLS files), so a bad key is a configuration error reported by `check` and at start
 * with its path, not a crash on the first request.
 */
export async function checkKeyMaterial(config: GatewayConfig, source: string): Promise<void> {
  const problems: string[] = [];
  const describe = (error: unknown): string =>
    error instanceof Error ? error.message : String(error);
  try {
    // Without a configured key, a throwaway one: the previous public keys are checked still.
    await createTokenSigner(createSigningKeys(() => undefined).resolve(config.tokens));
  } catch (error) {
    problems.push(`tokens: ${describe(error)}`);
  }
  config.auth.bearer.issuers.forEach((issuer, i) => {
    try {
      createKeySource(issuer);
    } catch (error) {
      problems.push(`auth.bearer.issuers[${i}]: ${describe(error)}`);
    }
  });
  for (const [name, upstream] of Object.entries(config.upstreams)) {
    if (upstream.tls === undefined) continue;
    await readUpstreamTls(upstream.tls).catch((error: unknown) =>
      problems.push(`upstreams.${name}.tls: ${describe(error)}`),
    );
  }
  // The API port's certificate is not here: it is checked where it is served (at start, and
  // at each reload, where a refusal keeps the served one without refusing the configuration).
  if (problems.length > 0) throw new ConfigError(source, problems);
}
