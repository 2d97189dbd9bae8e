// What a rate limit adds to a request in the gateway process, measured in process: the
// built limiter (dist, as serve builds it) on the bench's Redis checks one credential again
// and again, and the two fields it answers are set on a response with setHeader (dearer than
// the head list the request handler hands them to the engine in). CPU time of the whole bench
// process (process.cpuUsage: every thread, the collector's too) over the checks, less the same
// loop without a limiter. A lease check decides in process, so it costs a few microseconds:
// less than two like gateways measured one after the other differ by (the limits section's
// control row), which is why its target is read here.
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { median } from '../support/median.js';
import type { GatewayConfigInput } from '../support/gateway-yaml.js';
import { parseConfig } from '../../src/config/load-config.js';
import { createBackend } from '../../src/gateway/build-backend.js';
import type { Identity } from '../../src/identity/identity.js';
import { NO_SCOPES } from '../../src/identity/scopes.js';
import { createConfiguredRateLimiter } from '../../src/protection/configured-rate-limiter.js';
import type { RateLimiter } from '../../src/protection/rate-limiter.js';

/** Checks per repetition, and repetitions (the median is reported). */
const CHECKS = 100_000;
const REPETITIONS = 5;

/** CPU microseconds per check, `limiter` undefined: the loop alone. */
async function perCheck(
  limiter: RateLimiter | undefined,
  identity: Identity,
  res: ServerResponse,
): Promise<number> {
  const started = process.cpuUsage();
  for (let i = 0; i < CHECKS; i += 1) {
    const check = limiter?.checkCredential('accounts', undefined, identity);
    const verdict = check instanceof Promise ? await check : check;
    if (verdict !== undefined && verdict.policyHeader !== '') {
      res.setHeader('ratelimit-policy', verdict.policyHeader);
      res.setHeader('ratelimit', verdict.limitHeader);
    }
  }
  const used = process.cpuUsage(started);
  return (used.user + used.system) / CHECKS;
}

/**
 * Microseconds of CPU a check of the credential limit in `config` adds per request (median
 * of the repetitions, the loop's own cost taken off), after one unmeasured repetition.
 */
export async function limitCheckMicros(
  config: GatewayConfigInput,
  owner: { readonly key: string; readonly subject: string },
): Promise<number> {
  const parsed = parseConfig(JSON.stringify(config), 'the limits section');
  const backend = createBackend(parsed);
  const limiter = createConfiguredRateLimiter(parsed, {
    buckets: (options) => backend.buckets(options),
    countStoreError: () => undefined,
    warnStoreError: () => undefined,
    warnMalformedOverride: () => undefined,
  });
  if (limiter === undefined) throw new Error('limitCheckMicros: the configuration sets no limit');
  const identity: Identity = { ...owner, method: 'basic', scopes: NO_SCOPES };
  const res = new ServerResponse(new IncomingMessage(new Socket()));
  try {
    await perCheck(limiter, identity, res);
    const costs: number[] = [];
    for (let i = 0; i < REPETITIONS; i += 1)
      costs.push(
        (await perCheck(limiter, identity, res)) - (await perCheck(undefined, identity, res)),
      );
    return median(costs);
  } finally {
    await backend.credentials.close();
  }
}
