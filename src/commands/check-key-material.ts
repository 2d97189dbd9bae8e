import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { createKeySource } from '../auth/jwt/key-sources.js';
import type { GatewayConfig } from '../config/config-schema.js';
import { ConfigError } from '../config/load-config.js';
import { configuredFleetKey } from '../credentials/fleet-key-setting.js';
import { createSigningKeys } from '../tokens/signing-key.js';
import { checkKeyPair, holdsCertificate } from '../tls/check-key-pair.js';
import { readUpstreamTls, TlsFileError } from '../tls/upstream-tls.js';
import { createTokenSigner } from '../tokens/token-signer.js';

export interface KeyMaterialScope {
  /**
   * Also the files read only at start: the API port's certificate and key, and Redis's CA
   * (`check` and a start). Not at SIGHUP: a listener pair that fails then is refused by the
   * listener alone, keeping the served one without refusing the rest of the configuration,
   * and Redis's CA is a restart-only setting.
   */
  readonly startFiles: boolean;
}

/**
 * Loads every key the configuration names (signing key, previous keys, issuers' public
 * keys and files, upstreams' TLS files; with `startFiles`, the listener's pair and Redis's
 * CA), so a bad key is a configuration error reported by `check` and at start with its YAML
 * path, not a crash on the first request.
 */
export async function checkKeyMaterial(
  config: GatewayConfig,
  source: string,
  scope: KeyMaterialScope,
): Promise<void> {
  const problems: string[] = [];
  const describe = (error: unknown): string =>
    error instanceof Error ? error.message : String(error);
  try {
    // Without a configured key, a throwaway one: the previous public keys are checked still.
    await createTokenSigner(createSigningKeys(() => undefined).resolve(config.tokens));
  } catch (error) {
    problems.push(`tokens: ${describe(error)}`);
  }
  try {
    configuredFleetKey(config.auth.basic.verifiedRecords);
  } catch (error) {
    problems.push(`auth.basic.verifiedRecords.fleetKeyFile: ${describe(error)}`);
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
      problems.push(
        error instanceof TlsFileError
          ? `upstreams.${name}.tls.${error.setting}: ${error.reason}`
          : `upstreams.${name}.tls: ${describe(error)}`,
      ),
    );
  }
  if (scope.startFiles) problems.push(...(await startFileProblems(config)));
  if (problems.length > 0) throw new ConfigError(source, problems);
}

/** The listener's pair as it would be served, and Redis's CA as the client would read it. */
async function startFileProblems(config: GatewayConfig): Promise<string[]> {
  const problems: string[] = [];
  const read = (path: string, file: string): Promise<Buffer | undefined> =>
    readFile(file).catch((error: unknown) => {
      const code = (error as NodeJS.ErrnoException | undefined)?.code ?? 'error';
      problems.push(`${path}: cannot read ${resolve(file)} (${code})`);
      return undefined;
    });
  const { tls } = config.server;
  if (tls !== undefined) {
    const [cert, key] = await Promise.all([
      read('server.tls.certFile', tls.certFile),
      read('server.tls.keyFile', tls.keyFile),
    ]);
    const checked =
      cert === undefined || key === undefined ? undefined : checkKeyPair(cert, key, Date.now());
    if (checked?.ok === false) problems.push(`server.tls: ${checked.reason}`);
  }
  const redisTls = config.credentials.store === 'redis' ? config.credentials.redis.tls : undefined;
  if (redisTls !== undefined) {
    const ca = await read('credentials.redis.tls.caFile', redisTls.caFile);
    if (ca !== undefined && !holdsCertificate(ca))
      problems.push(
        `credentials.redis.tls.caFile: ${resolve(redisTls.caFile)} holds no PEM certificate`,
      );
  }
  return problems;
}
