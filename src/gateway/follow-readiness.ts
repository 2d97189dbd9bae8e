import type { CredentialStore } from '../credentials/credential-store.js';
import type { GatewayMetrics } from '../observability/metrics.js';

/** Whether the gateway drains, and gateway_ready kept true to it and to the store. */
export interface Readiness {
  /** True once close() began (it may come while listen() still opens the ports). */
  draining(): boolean;
  startDraining(): void;
}

/** gateway_ready follows the store's connection and the drain, whoever asks (or not). */
export function followReadiness(store: CredentialStore, metrics: GatewayMetrics): Readiness {
  let closing = false;
  const show = (): void => metrics.setReady(store.health.ready() && !closing);
  store.health.onChange(show);
  show();
  return {
    draining: () => closing,
    startDraining() {
      closing = true;
      show();
    },
  };
}
