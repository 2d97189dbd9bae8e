import type { Backend } from '../backends/backend.js';
import type { GatewayConfig } from '../config/config-schema.js';
import type { Logger } from '../observability/create-logger.js';
import { createSigningKeys } from '../tokens/signing-key.js';
import { createTokenSigner } from '../tokens/token-signer.js';
import { buildChainDeps } from './build-chain-deps.js';
import { buildExpiringCounter } from './build-expiring-counter.js';
import { buildServers } from './build-servers.js';
import { followRevocations } from './follow-revocations.js';
import { buildRequestChain } from './request-chain.js';
import { runningGateway, type Current, type Gateway } from './running-gateway.js';

export type { Gateway } from './running-gateway.js';

export interface GatewayDeps {
  logger: Logger;
  /** Milliseconds since the epoch. */
  now?: () => number;
  /** Replaces the backend the config names (tests pass a real one of their own). */
  backend?: Backend;
  /**
   * A worker of `serve --workers`: no admin port (the primary serves one for the set), and
   * the start is logged as `worker listening`.
   */
  worker?: boolean;
}

/**
 * The composition root: the only place that picks production implementations, each made by
 * a builder of this folder, in this order, once. What a configuration decides is the request
 * chain (request-chain.ts), which each reload builds again from the same ChainDeps
 * (running-gateway.ts). The CLI's one-off commands open their store through createBackend
 * (build-backend.ts).
 */
export async function createGateway(initial: GatewayConfig, deps: GatewayDeps): Promise<Gateway> {
  const { logger } = deps;
  const now = deps.now ?? Date.now;
  const { chainDeps, bootstrap, readiness, spanExport } = await buildChainDeps(initial, deps, now);
  const { backend, metrics } = chainDeps;
  // The CLI hands a key in (lifecycle/supervisor.ts chose it); a gateway made otherwise
  // generates its own here, kept across reloads.
  const signingKeys = createSigningKeys((message) => logger.warn(message));
  const signer = await createTokenSigner(signingKeys.resolve(initial.tokens), now);
  const current: Current = {
    config: initial,
    signer,
    chain: await buildRequestChain(initial, chainDeps, signer),
  };
  const chain = () => current.chain;
  followRevocations(backend.credentials, chain, metrics, now);
  const expiringCounter = buildExpiringCounter(initial, chainDeps);
  const worker = deps.worker === true;
  const servers = await buildServers(initial, {
    backend,
    metrics,
    logger,
    now,
    readiness,
    chain,
    worker,
  });
  return runningGateway(
    {
      chainDeps,
      signingKeys,
      servers,
      readiness,
      spanExport,
      bootstrap,
      expiringCounter,
      listeningMessage: worker ? 'worker listening' : 'gateway listening',
      storeName: deps.backend === undefined ? initial.credentials.store : 'injected',
    },
    current,
  );
}
