import type { RehashEvent } from '../auth/rehash-on-use.js';
import { describeFailure } from '../errors/describe-failure.js';
import type { Logger } from '../observability/create-logger.js';
import type { GatewayMetrics } from '../observability/metrics.js';

/**
 * One line per rehash, naming the key id or username and the cost it had, never the secret:
 * info when it was written or found changed, warn when it failed (retried on the next use).
 */
export function reportRehash(logger: Logger, metrics: GatewayMetrics, event: RehashEvent): void {
  const { owner, outcome, from } = event;
  metrics.countBcryptRehash(owner.kind, outcome);
  const fields = {
    ...(owner.kind === 'key' ? { key: owner.key } : { username: owner.username }),
    from_variant: from?.variant,
    from_cost: from?.cost,
    outcome,
  };
  if (outcome === 'failed') {
    logger.warn(
      { ...fields, cause: describeFailure(event.error) },
      'bcrypt hash not rehashed; retried on its next use',
    );
  } else if (outcome === 'written') logger.info(fields, 'bcrypt hash rehashed');
  else logger.info(fields, 'bcrypt hash not rehashed: it changed meanwhile');
}
