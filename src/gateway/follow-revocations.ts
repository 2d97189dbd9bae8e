import type { CredentialStore } from '../credentials/credential-store.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { RequestChain } from './request-chain.js';

/**
 * Revocations the store publishes evict from the caches of the chain serving now (`chain()`,
 * whichever reload made it); a new subscription flushes the Basic cache, as what was
 * published meanwhile is lost.
 */
export function followRevocations(
  store: CredentialStore,
  chain: () => RequestChain,
  metrics: GatewayMetrics,
  now: () => number,
): void {
  store.subscribe(
    (revocation, publishedAtMs) => {
      if (revocation.kind === 'key') chain().basic.evictKey(revocation.key);
      else {
        chain().basic.evictSubject(revocation.subject);
        chain().bearer.evictSubject(revocation.subject);
      }
      // The publisher's clock against this one: a skew between them shows in the lag, and
      // one that puts the publication ahead counts as no lag.
      if (publishedAtMs !== undefined)
        metrics.observeRevocationLag(Math.max(0, now() - publishedAtMs) / 1000);
    },
    (start) => {
      chain().basic.flush();
      if (start === 'again') metrics.countRevocationResubscribe();
    },
  );
}
